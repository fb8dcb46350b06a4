import { hourName, weekdayName } from './format';
import type { ReportTable } from './report-api';
import styles from './reports.module.css';

const HOURS = Array.from({ length: 24 }, (_, hour) => hour);
const WEEKDAYS = [1, 2, 3, 4, 5, 6, 7];

/** One hue from light to dark (ColorBrewer's Blues): ordered by lightness, so it reads without telling hues apart. */
const SCALE = ['#f7fbff', '#deebf7', '#c6dbef', '#9ecae1', '#6baed6', '#4292c6', '#2171b5', '#08519c', '#08306b'];

/**
 * The busiest hours as a grid of weekdays by hours: a table whose cells hold their number as text, the
 * shade only repeating it, so the figures read the same without colour.
 */
export function HeatMap({ table, valueKey, caption }: { table: ReportTable; valueKey: string; caption: string }) {
  const counts = new Map<string, number>();
  for (const row of table.rows) counts.set(`${row.weekday}-${row.hour}`, Number(row[valueKey] ?? 0));
  const max = Math.max(0, ...counts.values());
  const shade = (count: number) =>
    count === 0 || max === 0 ? 0 : Math.max(1, Math.round((count / max) * (SCALE.length - 1)));
  return (
    <div className={styles.tableScroll} tabIndex={0} role="region" aria-label={caption}>
      <table className={styles.heatMap}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            <td />
            {HOURS.map((hour) => (
              <th key={hour} scope="col" aria-label={hourName(hour)}>
                {hour}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {WEEKDAYS.map((weekday) => (
            <tr key={weekday}>
              <th scope="row">
                <span aria-hidden="true">{weekdayName(weekday).slice(0, 3)}</span>
                <span className="visually-hidden">{weekdayName(weekday)}</span>
              </th>
              {HOURS.map((hour) => {
                const count = counts.get(`${weekday}-${hour}`) ?? 0;
                const level = shade(count);
                return (
                  <td
                    key={hour}
                    style={{ background: SCALE[level], color: level > 4 ? '#ffffff' : '#18181b' }}
                    title={`${weekdayName(weekday)} ${hourName(hour)}: ${count}`}
                  >
                    {count}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
