//! A push written: a server's `validate_push` sees each plane before
//! anything is written and may refuse it; then the whole push is checked
//! (ids, types, payloads, the patch) and only then written, patch first.

use std::sync::Arc;

use a2_store::Event;

use crate::presence_set::checked_values;
use crate::push::{Push, PushContext};
use crate::server_core::{random_ids, ServerCore};
use crate::{ids, A2Error};

impl ServerCore {
    /// Check a push whole, let the validator see each plane, then append
    /// its events and write its patch; the appended events come back.
    pub(crate) async fn push(&self, session_id: &str, push: Push) -> Result<Vec<Event>, A2Error> {
        if push.events.is_empty() && push.presence.is_none() {
            return Err(A2Error::InvalidArgument {
                message: "a push carries events, a presence patch, or both".into(),
            });
        }
        for event in &push.events {
            if let Some(id) = &event.id {
                ids::validate_external_id(id)?;
            }
        }
        if let Some(validate) = self.push_validator() {
            let planes = [
                (!push.events.is_empty()).then(|| PushContext {
                    session_id: session_id.to_owned(),
                    events: push.events.clone(),
                    presence: None,
                }),
                push.presence.as_ref().map(|patch| PushContext {
                    session_id: session_id.to_owned(),
                    events: Vec::new(),
                    presence: Some(patch.clone()),
                }),
            ];
            for context in planes.into_iter().flatten() {
                validate(Arc::new(context))
                    .await
                    .map_err(|message| A2Error::PushRefused { session: session_id.to_owned(), message })?;
            }
        }
        // Everything the writes would refuse, refused before the first of
        // them: the events as the append will make them (types, payloads,
        // lane functions, an id twice in the batch), and the patch. Only a
        // store failure, or ids partly stored already, can refuse the append now.
        // Made once, so lane functions run once and the ids checked are the ids written.
        let planned = match push.events.is_empty() {
            true => Vec::new(),
            false => self.new_events(session_id, push.events, None, None, &random_ids)?,
        };
        a2_store::rules::check_batch(session_id, &planned)?;
        if let Some(patch) = &push.presence {
            checked_values(self.contract(), patch)?;
        }
        // The patch first: a failure between the two writes then leaves only
        // presence, which a retry rewrites to the same values, never events
        // that a retry would append twice. An outside writer's `seen`
        // defaults to 0, as the seeds have it.
        if let Some(patch) = push.presence {
            self.set_presence(session_id, patch, 0).await?;
        }
        if planned.is_empty() {
            return Ok(Vec::new());
        }
        self.append_new(session_id, planned).await
    }
}
