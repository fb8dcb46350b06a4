import { formatValue, isFigure } from './format';
import type { ReportTable } from './report-api';
import styles from './reports.module.css';

/** The link that downloads a table's rows as CSV, as the API writes them. */
export function CsvLink({ href, caption }: { href: string; caption: string }) {
  return (
    <a className={`button ${styles.csv}`} href={href} download aria-label={`Download CSV: ${caption}`}>
      Download CSV
    </a>
  );
}

/**
 * A report's table as the API answers it, its columns read from the answer: the figures behind a
 * chart, readable without it.
 */
export function DataTable({ table, caption }: { table: ReportTable; caption: string }) {
  return (
    // A long table scrolls in its box, which a keyboard can focus to scroll it.
    <div className={styles.tableScroll} tabIndex={0} role="region" aria-label={caption}>
      <table className={styles.table}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {table.columns.map((column) => (
              <th key={column.key} scope="col" className={isFigure(column.unit) ? styles.figure : undefined}>
                {column.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {table.rows.map((row, index) => (
            <tr key={index}>
              {table.columns.map((column, position) =>
                position === 0 ? (
                  <th key={column.key} scope="row">
                    {formatValue(row[column.key], column.unit, column.key)}
                  </th>
                ) : (
                  <td key={column.key} className={isFigure(column.unit) ? styles.figure : undefined}>
                    {formatValue(row[column.key], column.unit, column.key)}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
      {table.rows.length === 0 && <p className={styles.muted}>No rows in this period.</p>}
    </div>
  );
}
