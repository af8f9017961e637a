// A JSON viewer that keeps integers exact: payloads arrive as JSON text and
// are parsed with lossless-json, so 2^63-1 reads as 9223372036854775807.
import { useState } from "react";
import { isLosslessNumber, parse } from "lossless-json";

function Node({ value, name, depth }: { value: unknown; name?: string; depth: number }) {
  const [open, setOpen] = useState(depth < 2);
  const label = name !== undefined ? <span className="json-key">{JSON.stringify(name)}: </span> : null;
  if (isLosslessNumber(value)) {
    return (
      <div className="json-line">
        {label}
        <span className="json-number">{value.value}</span>
      </div>
    );
  }
  if (value === null || typeof value !== "object") {
    const kind = value === null ? "null" : typeof value;
    return (
      <div className="json-line">
        {label}
        <span className={`json-${kind}`}>{JSON.stringify(value)}</span>
      </div>
    );
  }
  const entries: [string | undefined, unknown][] = Array.isArray(value)
    ? value.map((v) => [undefined, v])
    : Object.entries(value as Record<string, unknown>);
  const [start, end] = Array.isArray(value) ? ["[", "]"] : ["{", "}"];
  if (entries.length === 0) {
    return (
      <div className="json-line">
        {label}
        {start}
        {end}
      </div>
    );
  }
  return (
    <div className="json-line">
      <button type="button" className="json-toggle" onClick={() => setOpen(!open)} aria-expanded={open}>
        {open ? "▾" : "▸"}
      </button>
      {label}
      {start}
      {open ? (
        <div className="json-children">
          {entries.map(([key, child], i) => (
            <Node key={key ?? i} name={key} value={child} depth={depth + 1} />
          ))}
        </div>
      ) : (
        <span className="json-more"> {entries.length} … </span>
      )}
      {end}
    </div>
  );
}

export function JsonView({ text }: { text: string }) {
  let value: unknown;
  try {
    value = parse(text);
  } catch {
    return <pre className="json">{text}</pre>;
  }
  return (
    <div className="json">
      <Node value={value} depth={0} />
    </div>
  );
}
