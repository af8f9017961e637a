// The command palette (Ctrl/Cmd+K): jump to any view, contract or session,
// and run the app's switches, from the keyboard.
import { useEffect, useMemo, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { commands } from "./commands";
import { unwrap } from "./api";
import { go } from "./route";
import { keys } from "./keys";

type Item = { label: string; hint?: string; run: () => void };

export function Palette({ onClose, extra }: { onClose: () => void; extra: Item[] }) {
  const [text, setText] = useState("");
  const [at, setAt] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const contracts = useQuery({ queryKey: keys.contracts(), queryFn: () => unwrap(commands.contractList({})) });
  useEffect(() => input.current?.focus(), []);
  const items = useMemo(() => {
    const all: Item[] = [
      { label: "Overview", run: () => go({ view: "overview" }) },
      { label: "Dead letters", run: () => go({ view: "dead-letters" }) },
      { label: "Audit log", run: () => go({ view: "audit" }) },
      { label: "Connect to another store", run: () => go({ view: "connect" }) },
      ...(contracts.data ?? []).map((c) => ({ label: `Sessions of ${c}`, run: () => go({ view: "sessions", contract: c }) })),
      ...extra,
    ];
    if (text.trimStart().startsWith("{")) {
      // A payload search: `{"customer": "c-7"}`, in every contract unless one is open.
      const contract = contracts.data?.length === 1 ? contracts.data[0] : "";
      return [{ label: `Search payloads for ${text.trim()}`, hint: "payload search", run: () => go({ view: "search", contract, payload: text.trim(), type: "", id: "" }) }];
    }
    const [contract, session] = text.split("/");
    if (contract && session) {
      all.unshift({ label: `Open session ${contract}/${session}`, hint: "contract/session", run: () => go({ view: "session", contract, session, tab: "events" }) });
    }
    const needle = text.toLowerCase();
    return all.filter((i) => i.label.toLowerCase().includes(needle) || i.hint !== undefined);
  }, [text, contracts.data, extra]);
  const choose = (item: Item | undefined) => {
    if (!item) return;
    item.run();
    onClose();
  };
  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div className="palette" role="dialog" aria-label="Command palette" onClick={(e) => e.stopPropagation()}>
        <input
          ref={input}
          value={text}
          placeholder="Go to… (contract/session opens one; { starts a payload search)"
          onChange={(e) => {
            setText(e.target.value);
            setAt(0);
          }}
          onKeyDown={(e) => {
            if (e.key === "ArrowDown") setAt(Math.min(at + 1, items.length - 1));
            else if (e.key === "ArrowUp") setAt(Math.max(at - 1, 0));
            else if (e.key === "Enter") choose(items[at]);
            else if (e.key === "Escape") onClose();
          }}
        />
        <ul>
          {items.map((item, i) => (
            <li key={item.label} className={i === at ? "on" : ""} onMouseEnter={() => setAt(i)} onClick={() => choose(item)}>
              {item.label}
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}
