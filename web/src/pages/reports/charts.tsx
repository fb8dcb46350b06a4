// The report charts. Recharts: it draws SVG with React itself (no second rendering engine beside
// React, and its styles go through the DOM, which the dashboard's Content-Security-Policy allows),
// tree-shakes to the charts used here, and its accessibility layer lets a keyboard move through the
// points. It loads with the reports page only, most of that chunk's 129 KB gzipped.
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import { formatValue } from './format';
import type { Value } from './report-api';
import styles from './reports.module.css';

/**
 * Okabe and Ito's palette, told apart with the common kinds of colour blindness; the legend, the
 * tooltips and the tables beside every chart name each series too, so no figure is read by colour alone.
 */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

export interface Series {
  key: string;
  name: string;
  /** Drawn dashed (a line against a limit, say). */
  dashed?: boolean;
  /** A colour of the palette that means something (green for positive); else the next one. */
  color?: string;
}

export type Point = Record<string, Value>;

interface ChartProps {
  data: Point[];
  /** The column the points are along (a date, a channel, an agent). */
  category: string;
  categoryUnit?: string;
  series: Series[];
  /** The unit of the series' values, for the axis and the tooltip. */
  unit: string;
  label: string;
}

const HEIGHT = 260;
// The series' names in the text colour: some of the palette's colours are too light for text, and
// the swatch beside each name carries the colour.
const legendText = (name: string) => <span className={styles.legendText}>{name}</span>;
const tooltipItem = { color: '#18181b' };
const axisTick = { fontSize: 12, fill: '#52525b' };
const margin = { top: 8, right: 16, bottom: 8, left: 8 };
const grid = { strokeDasharray: '3 3', stroke: '#e4e4e7' };

/** A chart's values and categories as its axes and tooltip show them. */
function formatters(unit: string, categoryUnit: string, category: string) {
  const byValue = (value: Value) => formatValue(value, unit);
  const byCategory = (value: Value) => formatValue(value, categoryUnit, category);
  const tooltip = {
    formatter: (value: unknown) => byValue(value as Value),
    labelFormatter: (value: unknown) => byCategory(value as Value),
    itemStyle: tooltipItem,
  };
  return { byValue, byCategory, tooltip };
}

/** A bar chart: stacked series (parts of one whole) or grouped ones; horizontal bars for long names. */
export function Bars({
  data,
  category,
  categoryUnit = 'text',
  series,
  unit,
  label,
  stacked = false,
  horizontal = false,
}: ChartProps & { stacked?: boolean; horizontal?: boolean }) {
  const { byValue, byCategory, tooltip } = formatters(unit, categoryUnit, category);
  const height = horizontal ? Math.max(HEIGHT, data.length * 36 + 60) : HEIGHT;
  return (
    <div className={styles.chart}>
      <BarChart
        responsive
        style={{ width: '100%', height }}
        data={data}
        layout={horizontal ? 'vertical' : 'horizontal'}
        title={label}
        margin={margin}
      >
        <CartesianGrid {...grid} />
        {horizontal ? (
          <>
            <XAxis type="number" tick={axisTick} tickFormatter={byValue} allowDecimals={false} />
            <YAxis type="category" dataKey={category} tick={axisTick} tickFormatter={byCategory} width={120} />
          </>
        ) : (
          <>
            <XAxis dataKey={category} tick={axisTick} tickFormatter={byCategory} />
            <YAxis tick={axisTick} tickFormatter={byValue} allowDecimals={false} width={64} />
          </>
        )}
        <Tooltip {...tooltip} />
        <Legend formatter={legendText} />
        {series.map((item, index) => (
          <Bar
            key={item.key}
            dataKey={item.key}
            name={item.name}
            stackId={stacked ? 'stack' : undefined}
            fill={item.color ?? PALETTE[index % PALETTE.length]}
            stroke="#ffffff"
            strokeWidth={stacked ? 1 : 0}
            isAnimationActive={false}
          />
        ))}
      </BarChart>
    </div>
  );
}

/** A line chart over days; a dashed series reads as a limit (a budget). */
export function Lines({ data, category, categoryUnit = 'date', series, unit, label }: ChartProps) {
  const { byValue, byCategory, tooltip } = formatters(unit, categoryUnit, category);
  return (
    <div className={styles.chart}>
      <LineChart responsive style={{ width: '100%', height: HEIGHT }} data={data} title={label} margin={margin}>
        <CartesianGrid {...grid} />
        <XAxis dataKey={category} tick={axisTick} tickFormatter={byCategory} />
        <YAxis tick={axisTick} tickFormatter={byValue} width={72} />
        <Tooltip {...tooltip} />
        <Legend formatter={legendText} />
        {series.map((item, index) => (
          <Line
            key={item.key}
            type="monotone"
            dataKey={item.key}
            name={item.name}
            stroke={item.color ?? PALETTE[index % PALETTE.length]}
            strokeWidth={2}
            strokeDasharray={item.dashed ? '6 4' : undefined}
            dot={{ r: 3 }}
            connectNulls
            isAnimationActive={false}
          />
        ))}
      </LineChart>
    </div>
  );
}
