// The sidebar's icons: a few strokes each, drawn inline so they cost no request and follow the text colour.
const paths = {
  inbox: 'M4 13h4l2 3h4l2-3h4M4 13l2.5-7h11l2.5 7v6H4z',
  contacts:
    'M16 19v-1.5a3.5 3.5 0 0 0-3.5-3.5h-5A3.5 3.5 0 0 0 4 17.5V19M10 11a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM20 19v-1.5a3.5 3.5 0 0 0-2.5-3.4M15.5 5.1a3 3 0 0 1 0 5.8',
  reports: 'M4 20h16M7 16v-5M12 16V6M17 16v-8',
  code: 'M9 8l-4 4 4 4M15 8l4 4-4 4',
  settings: 'M4 7h10M18 7h2M4 17h4M12 17h8M16 5v4M10 15v4',
  signOut: 'M15 12H4M8 8l-4 4 4 4M13 4h6v16h-6',
  menu: 'M4 7h16M4 12h16M4 17h16',
} as const;

export type IconName = keyof typeof paths;

export function Icon({ name }: { name: IconName }) {
  return (
    <svg className="icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
      <path
        d={paths[name]}
        fill="none"
        stroke="currentColor"
        strokeWidth="1.8"
        strokeLinecap="round"
        strokeLinejoin="round"
      />
    </svg>
  );
}
