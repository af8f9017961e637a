//! What goes out on the wire: events as the seeds' clients see them
//! (`sessionId`, `createdAt` in epoch ms), the presence snapshot and patches.

use a2_engine::{PresenceChange, PresenceMap};
use a2_store::Event;
use serde_json::{json, Map, Value};

/// An event for a client: the session's own id (not the storage key), camelCase.
pub fn event_to_wire(event: &Event) -> Value {
    let mut wire = json!({
        "id": event.id,
        "type": event.event_type,
        "payload": event.payload,
        "index": event.index,
        "sessionId": event.session,
        "createdAt": event.created_at,
    });
    if let Some(cause) = &event.cause {
        let mut c =
            json!({ "consumer": cause.consumer, "lane": cause.lane, "index": cause.index, "attempt": cause.attempt });
        if let Some(size) = cause.batch_size {
            c["batchSize"] = json!(size);
        }
        wire["cause"] = c;
    }
    if let Some(by) = &event.scheduled_by {
        wire["scheduledBy"] = json!({ "task": by.task, "name": by.name });
    }
    wire
}

/// The presence map, whole: `{ "snapshot": { participant: { field: { value, seen, at } } } }`.
/// A reconnecting client replaces everyone else's entries with it.
pub fn presence_snapshot_to_wire(map: &PresenceMap) -> Value {
    let snapshot: Map<String, Value> = map
        .iter()
        .map(|(participant, fields)| {
            let fields: Map<String, Value> = fields
                .iter()
                .map(|(field, v)| (field.clone(), json!({ "value": v.value, "seen": v.seen, "at": v.at })))
                .collect();
            (participant.clone(), Value::Object(fields))
        })
        .collect();
    json!({ "snapshot": snapshot })
}

/// One field's change: `{ participant, values: { field: value | null }, seen, at }`,
/// `null` when it was deleted or expired.
pub fn presence_patch_to_wire(change: &PresenceChange) -> Value {
    let mut values = Map::new();
    values.insert(change.field.clone(), change.value.clone().unwrap_or(Value::Null));
    json!({ "participant": change.participant, "values": values, "seen": change.seen, "at": change.at })
}
