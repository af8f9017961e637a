//! The Timers view's commands: what is due, store-wide or in one session,
//! and the two changes an operator may make to a timer.

use a2_operator::{TimerDelivered, TimerQuery, TimerRef, TimerView};

use super::*;

impl Studio {
    pub async fn timer_list(&self, request: TimerQuery) -> Result<TimerPage, ApiError> {
        let page = self.operator()?.timer_list(&request).await?;
        Ok(TimerPage { items: page.items, next: page.next })
    }

    pub async fn timer_deliver(&self, request: TimerRef) -> Result<TimerDelivered, ApiError> {
        let delivered = self.operator()?.timer_deliver(&request).await?;
        self.bump();
        Ok(delivered)
    }

    pub async fn timer_cancel(&self, request: TimerRef) -> Result<TimerView, ApiError> {
        let cancelled = self.operator()?.timer_cancel(&request).await?;
        self.bump();
        Ok(cancelled)
    }
}
