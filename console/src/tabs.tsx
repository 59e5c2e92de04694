import type { ComponentChildren } from "preact";
import { useRef } from "preact/hooks";

/**
 * Tabs (the WAI-ARIA tabs pattern): arrow keys, Home and End move between
 * them, the selected one alone in the tab order; only its panel is drawn.
 */
export function Tabs(
  { label, tabs, selected, onSelect }: {
    label: string;
    tabs: { id: string; title: string; panel: () => ComponentChildren }[];
    selected: string;
    onSelect: (id: string) => void;
  },
) {
  const list = useRef<HTMLDivElement>(null);
  const current = tabs.find((t) => t.id === selected) ?? tabs[0];
  const move = (e: KeyboardEvent) => {
    const at = tabs.indexOf(current);
    const to = e.key === "ArrowRight"
      ? (at + 1) % tabs.length
      : e.key === "ArrowLeft"
      ? (at - 1 + tabs.length) % tabs.length
      : e.key === "Home"
      ? 0
      : e.key === "End"
      ? tabs.length - 1
      : -1;
    if (to < 0) return;
    e.preventDefault();
    onSelect(tabs[to].id);
    list.current?.querySelector<HTMLElement>(`#tab-${tabs[to].id}`)?.focus();
  };
  return (
    <>
      <div class="tabs" role="tablist" aria-label={label} ref={list}>
        {tabs.map((t) => (
          <button
            type="button"
            role="tab"
            key={t.id}
            id={`tab-${t.id}`}
            aria-selected={t === current}
            aria-controls={t === current ? `panel-${t.id}` : undefined}
            tabIndex={t === current ? 0 : -1}
            onClick={() => onSelect(t.id)}
            onKeyDown={move}
          >
            {t.title}
          </button>
        ))}
      </div>
      <div
        class="tab-panel"
        role="tabpanel"
        id={`panel-${current.id}`}
        aria-labelledby={`tab-${current.id}`}
        tabIndex={0}
      >
        {current.panel()}
      </div>
    </>
  );
}
