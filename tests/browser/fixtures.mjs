// The files the browser tests upload, generated here so their content is in plain sight: a
// 250-row CSV (three pages of the preview) and a workbook with a visible and a hidden sheet.

import { xlsx } from './helpers.mjs';

/** customers.csv: 250 rows of every CSV column type, with quoting and empty cells. */
export function customersCsv() {
  const lines = ['id,name,amount,joined,active,note'];
  for (let i = 1; i <= 250; i += 1) {
    const day = String(((i - 1) % 28) + 1).padStart(2, '0');
    let note = '';
    if (i === 3) note = '"Smith, ""Jr."""';
    else if (i % 10 === 0) note = `every tenth: ${i}`;
    lines.push(`${i},Customer ${i},${i}.25,2024-02-${day},${i % 2 === 0},${note}`);
  }
  return `${lines.join('\r\n')}\r\n`;
}

/** The values customers.csv row i (1-based) holds, typed as the API renders them. */
export function customerValues(i) {
  const day = String(((i - 1) % 28) + 1).padStart(2, '0');
  let note = null;
  if (i === 3) note = 'Smith, "Jr."';
  else if (i % 10 === 0) note = `every tenth: ${i}`;
  return [i, `Customer ${i}`, i + 0.25, `2024-02-${day}`, i % 2 === 0, note];
}

export const CUSTOMER_COLUMNS = ['id', 'name', 'amount', 'joined', 'active', 'note'];
export const CUSTOMER_TYPES = ['integer', 'text', 'decimal', 'date', 'boolean', 'text'];

/** inventory.xlsx: sheet "Stock" (12 rows) and the hidden sheet "Costs" (3 rows). */
export const WORKBOOK = [
  {
    name: 'Stock',
    hidden: false,
    rows: [
      ['sku', 'item', 'qty', 'price', 'received', 'in_stock'],
      ...Array.from({ length: 12 }, (_, k) => [
        `SKU-${100 + k}`,
        ['Bolt', 'Nut', 'Washer', 'Gear'][k % 4] + ` ${k + 1}`,
        (k + 1) * 3,
        k + 0.5,
        { date: `2024-03-${String(k + 1).padStart(2, '0')}` },
        k % 3 !== 0,
      ]),
    ],
  },
  {
    name: 'Costs',
    hidden: true,
    rows: [
      ['center', 'budget'],
      ['North', 1200],
      ['South', 950.75],
      ['Head office', 30000],
    ],
  },
];

/** The rows of a workbook sheet as the API renders them (dates as ISO 8601). */
export function workbookValues(sheet) {
  return WORKBOOK[sheet].rows.slice(1).map((row) => row.map((v) => (v && v.date ? v.date : v)));
}

export function inventoryXlsx() {
  return xlsx(WORKBOOK);
}
