//! The operations console's actions: acknowledge a cursor through an index
//! in one store call, and pause or resume a consumer store-wide.

use a2_engine::A2Error;
use a2_store::{ConsumerPause, ConsumerResume, CursorAdvance, CursorAdvanced, PausedConsumer, StoreConsumer};
use serde_json::json;

use crate::{ConsumeTarget, Consumed, HeadView, Operator, OperatorError, Result};

/// A consumer of a contract, store-wide.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsumerRef {
    pub contract: String,
    pub consumer: String,
}

impl ConsumerRef {
    fn checked(&self) -> Result<()> {
        if self.contract.is_empty() || self.consumer.is_empty() {
            return Err(OperatorError::invalid("a contract and a consumer name are needed"));
        }
        Ok(())
    }
}

impl Operator {
    /// Move a string-lane consumer's cursor through an index without running
    /// it: one transaction, audited in it, whatever the distance.
    pub(crate) async fn cursor_ack(&self, target: &ConsumeTarget, cursor: &HeadView) -> Result<Consumed> {
        let ConsumeTarget { contract, session, consumer, through } = target;
        let audit = self.entry(
            "consume.ack",
            contract,
            session,
            json!({ "consumer": consumer, "through": through, "from": cursor.next_index }),
        );
        let lane = cursor.lane.clone().unwrap_or_default();
        let params = CursorAdvance {
            session: target.session_ref().key()?,
            consumer: StoreConsumer::log(consumer, lane),
            through: *through,
            audit: Some(audit),
        };
        match self.store().cursor_advance(params).await? {
            CursorAdvanced::Moved { next, .. } => Ok(Consumed { index: next.saturating_sub(1) }),
            CursorAdvanced::Held { index, holder, until } => {
                let left = (until - self.now_ms()).max(0) as f64 / 1000.0;
                Err(OperatorError::Busy {
                    what: format!(
                        "consumer '{consumer}' is running event {index} in session '{}' (holder {holder}, lease {left:.1} s more): \
                         nothing was acknowledged; try again when that attempt ends",
                        session
                    ),
                })
            }
            CursorAdvanced::DeadLettered { index, last_error } => Err(A2Error::ConsumerDeadLettered {
                consumer: consumer.clone(),
                session: session.clone(),
                index,
                last_error: last_error.unwrap_or_else(|| "every attempt ended before it finished".into()),
            }
            .into()),
        }
    }

    /// Pause a consumer in every session and every process; its running attempts finish.
    pub async fn consumer_pause(&self, target: &ConsumerRef, reason: &str) -> Result<PausedConsumer> {
        target.checked()?;
        self.writable("pause")?;
        if reason.trim().is_empty() {
            return Err(OperatorError::invalid("a pause needs a reason, for whoever finds the consumer paused"));
        }
        let audit =
            self.wide_entry("pause", Some(&target.contract), json!({ "consumer": target.consumer, "reason": reason }));
        let params = ConsumerPause {
            contract: target.contract.clone(),
            consumer: target.consumer.clone(),
            actor: format!("{}@{}", self.actor.user, self.actor.host),
            reason: reason.trim().to_owned(),
            audit: Some(audit),
        };
        Ok(self.store().consumer_pause(params).await?)
    }

    /// Lift a pause; `false` when the consumer was not paused. Background
    /// servers find the held work on their next rescue pass.
    pub async fn consumer_resume(&self, target: &ConsumerRef) -> Result<bool> {
        target.checked()?;
        self.writable("resume")?;
        let audit = self.wide_entry("resume", Some(&target.contract), json!({ "consumer": target.consumer }));
        let params =
            ConsumerResume { contract: target.contract.clone(), consumer: target.consumer.clone(), audit: Some(audit) };
        Ok(self.store().consumer_resume(params).await?)
    }

    /// Paused consumers, of one contract or all.
    pub async fn consumer_pauses(&self, contract: Option<&str>) -> Result<Vec<PausedConsumer>> {
        Ok(self.store().consumer_pause_list(contract).await?)
    }
}
