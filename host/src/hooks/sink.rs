//! A plugin sink (`[events.plugin.<name>]`): its component's pool, as the events room's
//! sinks take one. A trap, a timeout or an error it answers fails the batch, which the
//! sink's loop sends again with backoff.

use std::future::Future;
use std::pin::Pin;

use anyhow::Context;

use crate::config::Config;
use crate::events::sinks::{Deliver, Sink};
use crate::sandbox::pool::SinkKind;
use crate::sandbox::{InstancePool, Runtime};

struct PluginSink(InstancePool<SinkKind>);

impl Deliver for PluginSink {
    fn deliver(&self, events: Vec<String>) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + '_>> {
        Box::pin(async move {
            let answered =
                self.0.call(None, |store, sink| Box::pin(async move { sink.call_deliver(store, &events).await })).await;
            match answered {
                Ok(Ok(())) => Ok(()),
                Ok(Err(said)) => Err(format!("{} answered: {said}", self.0.label())),
                Err(e) => Err(e.to_string()),
            }
        })
    }
}

/// Loads every `[events.plugin.<name>]` component as a sink; refuses to start on the
/// first that cannot serve as one.
pub async fn configured(config: &Config, runtime: &Runtime) -> anyhow::Result<Vec<Sink>> {
    let mut sinks = Vec::new();
    for (name, hook) in &config.events.plugins {
        let pool = super::load::<SinkKind>(format!("sink `{name}`"), hook, config, runtime)
            .await
            .with_context(|| format!("events.plugin.{name}"))?;
        sinks.push(Sink::plugin(name, Box::new(PluginSink(pool))));
    }
    Ok(sinks)
}
