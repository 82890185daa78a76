// The upload side of the page: the choice of template (and of its policy for rows with errors)
// the next files are sent with, a card per chosen or dropped file with its upload's progress
// (at most PARALLEL_UPLOADS at once), then its task's state once the server accepted it, or the
// server's reason when it refused it. Files over resumable.js's threshold go through tus and
// resume after a dropped connection or a reload. What happens to an accepted file (listed,
// watched) is the page's business, reached through the hooks given to init().

import * as api from './api.js';
import * as resumable from './resumable.js';
import { POLICIES, policyText } from './templates.js';
import { announce, button, formatBytes } from './util.js';

const PARALLEL_UPLOADS = 3;

const $ = (id) => document.getElementById(id);

/**
 * From app.js: session() (the current sign-in; answers of an older one are dropped),
 * accepted(upload) (lists and watches an accepted file, returns its view), renderStatus(element,
 * view) and openPreview(fileId).
 */
let hooks;

const policies = new Map(); // the chooser's template names -> their on_invalid

/**
 * Fills the template chooser from a list of templates (the Templates panel's), keeping the
 * current choice while it is still listed.
 */
export function setTemplates(templates) {
  const select = $('upload-template');
  const current = select.value;
  policies.clear();
  const options = [new Option('No template', '')];
  for (const template of templates) {
    policies.set(template.name, template.on_invalid);
    options.push(new Option(template.name, template.name));
  }
  select.replaceChildren(...options);
  select.value = policies.has(current) ? current : '';
  templateChosen();
}

/**
 * The policy chooser applies to a template only (the server refuses on_invalid without one); its
 * default option names the chosen template's own policy.
 */
function templateChosen() {
  const name = $('upload-template').value;
  const policy = $('upload-on-invalid');
  policy.disabled = !name;
  if (!name) policy.value = '';
  policy.options[0].textContent = name
    ? `As the template says (${policyText(policies.get(name)).toLowerCase()})`
    : 'As the template says';
}

/** The template and policy files picked now are sent with: {template, onInvalid}, nulls for none. */
function chosen() {
  const template = $('upload-template').value || null;
  return { template, onInvalid: template && ($('upload-on-invalid').value || null) };
}

/** Draws an accepted file's task state on its card: status, and Preview / Dismiss when they apply. */
export function showTask(card, view) {
  hooks.renderStatus(card.querySelector('.upload-status'), view);
  card.querySelector('.preview-button').hidden = !api.previewable(view.task);
  card.querySelector('.dismiss-button').hidden = !api.TERMINAL.has(view.task.status);
}

/** Removes every card (sign-out). */
export function clear() {
  $('uploads').replaceChildren();
}

/** The upload card of an accepted file, if it is still shown. */
export function cardOf(fileId) {
  return $('uploads').querySelector(`li[data-file-id="${CSS.escape(fileId)}"]`);
}

function uploadCard(file, template) {
  const li = document.createElement('li');
  li.className = 'upload';
  const name = document.createElement('span');
  name.className = 'file-name';
  name.textContent = file.name;
  const size = document.createElement('span');
  size.className = 'hint';
  size.textContent = template ? `${formatBytes(file.size)} · template ${template}` : formatBytes(file.size);
  const bar = document.createElement('progress');
  bar.max = 100;
  bar.value = 0;
  bar.setAttribute('aria-label', `Upload of ${file.name}`);
  const status = document.createElement('div');
  status.className = 'upload-status';
  status.textContent = 'waiting to upload';
  const open = button('Preview', 'secondary preview-button', `Preview ${file.name}`,
    () => hooks.openPreview(li.dataset.fileId));
  open.hidden = true;
  const dismiss = button('Dismiss', 'secondary dismiss-button', `Dismiss ${file.name}`,
    () => dismissCard(li));
  dismiss.hidden = true; // until the upload is refused or its task has ended
  const actions = document.createElement('div');
  actions.className = 'upload-actions';
  actions.append(open, dismiss);
  li.append(name, size, bar, status, actions);
  return li;
}

/**
 * Removes a finished upload's card, so the list does not grow for as long as the page is open
 * (the file stays in My files). Focus goes to a neighbouring card's Dismiss, else to the file
 * chooser, rather than being lost with the button.
 */
function dismissCard(card) {
  const next = [card.nextElementSibling, card.previousElementSibling]
    .map((li) => li && li.querySelector('.dismiss-button:not([hidden])'))
    .find(Boolean);
  card.remove();
  if (next) next.focus();
  else $('file-input').focus();
}

async function uploadOne(file, card, choice) {
  const mine = hooks.session();
  const bar = card.querySelector('progress');
  const status = card.querySelector('.upload-status');
  status.textContent = 'uploading';
  const started = performance.now();
  try {
    const progress = (sent, total, resumedFrom = 0) => {
      if (sent < total) {
        bar.value = Math.round((100 * sent) / Math.max(total, 1));
        // Speed counts this page's bytes only, not those the server had before a resume.
        const seconds = (performance.now() - started) / 1000;
        const speed = seconds > 0 && sent > resumedFrom ? ` · ${formatBytes((sent - resumedFrom) / seconds)}/s` : '';
        const resumed = resumedFrom > 0 ? ` · resumed at ${formatBytes(resumedFrom)}` : '';
        status.textContent = `uploading: ${bar.value}% · ${formatBytes(sent)} of ${formatBytes(total)}${speed}${resumed}`;
      } else {
        // Every byte is sent, but the server answers only once it has stored the file, which
        // takes a while for a large one: an indeterminate bar, not a 100 % that seems stuck.
        bar.removeAttribute('value');
        status.textContent = 'processing on the server…';
      }
    };
    // Large files go resumably: they survive a dropped connection and a reload of the page.
    const accepted = file.size > resumable.THRESHOLD_BYTES
      ? await resumable.upload(file, api.currentKey(), progress, choice)
      : await api.upload(file, progress, choice);
    if (mine !== hooks.session()) return;
    bar.value = 100;
    card.dataset.fileId = accepted.source_file.id;
    const view = hooks.accepted(accepted);
    showTask(card, view);
    announce(`${file.name} uploaded`);
  } catch (error) {
    if (mine !== hooks.session() || error.status === 401) return;
    card.classList.add('refused');
    card.querySelector('.dismiss-button').hidden = false;
    bar.hidden = true;
    status.className = 'upload-status error';
    status.textContent = error.status
      ? `Refused: ${error.message} (${error.code}, HTTP ${error.status})`
      : `Failed: ${error.message}`;
    announce(`${file.name} refused: ${error.message}`);
  }
}

async function uploadAll(fileList) {
  // What was chosen when the files were picked, however long they wait for their turn.
  const choice = chosen();
  const queue = [...fileList].map((file) => {
    const card = uploadCard(file, choice.template);
    $('uploads').prepend(card);
    return [file, card, choice];
  });
  if (queue.length === 0) return;
  announce(`Uploading ${queue.length} ${queue.length === 1 ? 'file' : 'files'}`);
  const workers = Array.from({ length: Math.min(PARALLEL_UPLOADS, queue.length) }, async () => {
    for (let item = queue.shift(); item; item = queue.shift()) {
      await uploadOne(...item);
    }
  });
  await Promise.all(workers);
}

/** Wires the file chooser and the drop zone; `h` is what this module needs of the page. */
export function init(h) {
  hooks = h;
  $('upload-on-invalid').append(...Object.entries(POLICIES).map(([value, text]) => new Option(text, value)));
  $('upload-template').addEventListener('change', templateChosen);
  const zone = $('dropzone');
  const input = $('file-input');
  input.addEventListener('change', () => {
    const chosen = [...input.files];
    input.value = '';
    uploadAll(chosen);
  });
  const carriesFiles = (event) => event.dataTransfer && [...event.dataTransfer.types].includes('Files');
  zone.addEventListener('dragenter', (event) => {
    if (carriesFiles(event)) zone.classList.add('dragging');
  });
  zone.addEventListener('dragover', (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    zone.classList.add('dragging');
  });
  zone.addEventListener('dragleave', (event) => {
    if (!zone.contains(event.relatedTarget)) zone.classList.remove('dragging');
  });
  zone.addEventListener('drop', (event) => {
    event.preventDefault();
    zone.classList.remove('dragging');
    uploadAll(event.dataTransfer.files);
  });
  // A file dropped next to the zone must not make the browser leave the page to open it.
  window.addEventListener('dragover', (event) => {
    if (carriesFiles(event)) event.preventDefault();
  });
  window.addEventListener('drop', (event) => event.preventDefault());
}
