// The Templates panel: the caller's import templates (the latest version of each) and one of them
// shown with its fields, their types, formats and constraints. Read-only: templates are written
// through the API. Each list that comes in is handed to the hook given to init() (the upload's
// template chooser is filled from it).

import * as api from './api.js';
import { button, formatCount, formatTime } from './util.js';

/** The `on_invalid` policies, in the words the page shows them with. */
export const POLICIES = {
  reject_file: 'Reject the file',
  drop_invalid_rows: 'Drop invalid rows',
  keep_invalid_rows: 'Keep invalid rows',
};

/**
 * The order constraints are shown in, whatever order the stored document has (the server keeps
 * it as jsonb, which orders keys its own way); any other comes after these.
 */
const CONSTRAINT_ORDER = ['required', 'unique', 'minLength', 'maxLength', 'minimum', 'maximum', 'pattern', 'enum'];

/** An `enum` constraint shows this many values at most (a template may hold 10,000). */
const ENUM_SHOWN = 20;

const $ = (id) => document.getElementById(id);

let listed = () => {}; // from app.js: called with every list of templates that comes in
let generation = 0; // bumped by clear(): an answer asked for before it draws nothing
let showing = 0; // bumped by every Show: only the newest may draw

/** Words for a policy the page does not know (a newer server's) are its own name. */
export function policyText(onInvalid) {
  return POLICIES[onInvalid] ?? onInvalid;
}

/** Forgets the list and the template shown (sign-out, another sign-in). */
export function clear() {
  generation += 1;
  showing += 1;
  $('templates-body').replaceChildren();
  $('templates-empty').hidden = true;
  $('templates-error').textContent = '';
  $('template-detail').hidden = true;
  $('reload-templates').disabled = false;
  listed([]);
}

/** Lists the caller's templates. */
export async function load() {
  const mine = generation;
  $('templates-error').textContent = '';
  $('reload-templates').disabled = true;
  try {
    // Every page (a page ends at 100 templates or 8 MiB of schemas).
    const templates = [];
    let after = null;
    do {
      const query = after === null ? '' : `?after=${encodeURIComponent(after)}`;
      const page = await api.getJson(`/api/v1/templates${query}`);
      if (mine !== generation) return;
      templates.push(...page.templates);
      after = page.next_after ?? null;
    } while (after !== null);
    $('templates-body').replaceChildren(...templates.map(templateRow));
    $('templates-empty').hidden = templates.length > 0;
    listed(templates);
  } catch (error) {
    if (mine === generation && error.status !== 401) {
      $('templates-error').textContent = `Templates could not be loaded: ${error.message}`;
    }
  } finally {
    if (mine === generation) $('reload-templates').disabled = false;
  }
}

function fieldsOf(template) {
  const fields = template.schema && template.schema.fields;
  return Array.isArray(fields) ? fields : [];
}

function templateRow(template) {
  const tr = document.createElement('tr');
  const name = document.createElement('th');
  name.scope = 'row';
  name.className = 'template-name';
  name.textContent = template.name;
  const version = document.createElement('td');
  version.className = 'number';
  version.textContent = String(template.version);
  const policy = document.createElement('td');
  policy.textContent = policyText(template.on_invalid);
  const fields = document.createElement('td');
  fields.className = 'number';
  fields.textContent = formatCount(fieldsOf(template).length);
  const actions = document.createElement('td');
  actions.className = 'actions';
  actions.append(button('Show', 'secondary', `Show template ${template.name}`, () => show(template.name)));
  tr.append(name, version, policy, fields, actions);
  return tr;
}

/** Shows a template's latest version, as the server has it now, and moves focus to it. */
async function show(name) {
  const request = ++showing;
  const mine = generation;
  $('templates-error').textContent = '';
  try {
    const template = await api.getJson(`/api/v1/templates/${encodeURIComponent(name)}`);
    if (request !== showing || mine !== generation) return;
    renderDetail(template);
    $('template-title').focus();
  } catch (error) {
    if (request !== showing || mine !== generation || error.status === 401) return;
    $('templates-error').textContent = `Template ${name} could not be shown: ${error.message}`;
  }
}

/** A JSON value as a template author wrote it: strings bare, anything else as JSON. */
function literal(value) {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function quoted(values) {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

function renderDetail(template) {
  const schema = template.schema || {};
  $('template-title').textContent = `Template ${template.name}, version ${template.version}`;
  const meta = [
    ['Rows with errors', policyText(template.on_invalid)],
    ['Sheet', template.sheet ?? 'the first sheet'],
    ['Missing values', quoted(Array.isArray(schema.missingValues) ? schema.missingValues : [''])],
  ];
  if (schema.primaryKey !== undefined) {
    const key = Array.isArray(schema.primaryKey) ? schema.primaryKey : [schema.primaryKey];
    meta.push(['Primary key', key.map(literal).join(' + ')]);
  }
  meta.push(['Created', formatTime(template.created_at)]);
  $('template-meta').replaceChildren(...meta.map(([term, value]) => {
    const item = document.createElement('div');
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = value;
    item.append(dt, dd);
    return item;
  }));

  const fields = fieldsOf(template);
  $('template-fields-caption').textContent = `Fields of template ${template.name}`;
  $('template-fields-body').replaceChildren(...fields.map(fieldRow));
  $('template-detail').hidden = false;
}

function fieldRow(field) {
  const tr = document.createElement('tr');
  const name = document.createElement('th');
  name.scope = 'row';
  const label = document.createElement('span');
  label.className = 'field-name';
  label.textContent = literal(field.name);
  name.append(label);
  const others = [field.title, ...(Array.isArray(field.alternateNames) ? field.alternateNames : [])]
    .filter((n) => typeof n === 'string' && n !== '');
  if (others.length) {
    const also = document.createElement('span');
    also.className = 'field-also';
    also.textContent = `also: ${quoted(others)}`;
    name.append(also);
  }
  const type = document.createElement('td');
  type.textContent = field.type ?? 'string';
  const format = document.createElement('td');
  const formats = Array.isArray(field.formats) ? field.formats : [];
  format.textContent = [...(field.format || !formats.length ? [field.format ?? 'default'] : []), ...formats]
    .join(' or ');
  tr.append(name, type, format, listCell(constraintTexts(field.constraints)),
    listCell(transformTexts(field.transforms)));
  return tr;
}

/** A cell listing `items`, one per line, or marked empty. */
function listCell(items) {
  const cell = document.createElement('td');
  if (items.length) {
    const list = document.createElement('ul');
    list.className = 'constraints';
    for (const text of items) {
      const li = document.createElement('li');
      li.textContent = text;
      list.append(li);
    }
    cell.append(list);
  } else {
    cell.className = 'empty';
  }
  return cell;
}

/** "trim", "phone: DE", "map: "ja" → "true", …", one per transform, in the order they apply. */
function transformTexts(transforms) {
  if (!Array.isArray(transforms)) return [];
  return transforms.map((t) => {
    if (typeof t === 'string') return t;
    if (!t || typeof t !== 'object') return literal(t);
    if ('map' in t) {
      const pairs = Object.entries(t.map ?? {});
      const shown = pairs.slice(0, ENUM_SHOWN).map(([from, to]) => `${JSON.stringify(from)} → ${JSON.stringify(to)}`);
      const more = pairs.length > ENUM_SHOWN ? ` … (${formatCount(pairs.length)} texts)` : '';
      return `map${t.ignore_case ? ' (any case)' : ''}: ${shown.join(', ')}${more}`;
    }
    const [name, options] = Object.entries(t)[0] ?? ['?', null];
    if (name === 'replace') return `replace: ${JSON.stringify(options?.pattern)} → ${JSON.stringify(options?.with)}`;
    if (name === 'phone') return `phone: ${options?.region}`;
    if (name === 'split') return `split: ${JSON.stringify(options?.separator)}, part ${options?.index ?? 0}`;
    return `${name}: ${literal(options)}`;
  });
}

/** "required", "maximum: 150", "enum: "EUR", "USD"", one per constraint the field sets. */
function constraintTexts(constraints) {
  if (!constraints || typeof constraints !== 'object') return [];
  const rank = (name) => {
    const i = CONSTRAINT_ORDER.indexOf(name);
    return i < 0 ? CONSTRAINT_ORDER.length : i;
  };
  const texts = [];
  const entries = Object.entries(constraints).sort(([a], [b]) => rank(a) - rank(b));
  for (const [name, value] of entries) {
    if (value === false) continue;
    if (value === true) {
      texts.push(name);
    } else if (Array.isArray(value)) {
      const more = value.length > ENUM_SHOWN ? ` … (${formatCount(value.length)} values)` : '';
      texts.push(`${name}: ${quoted(value.slice(0, ENUM_SHOWN))}${more}`);
    } else {
      texts.push(`${name}: ${literal(value)}`);
    }
  }
  return texts;
}

/** `onList` is called with every list of templates that comes in (an empty one on clear()). */
export function init({ onList }) {
  listed = onList;
  $('reload-templates').addEventListener('click', load);
}
