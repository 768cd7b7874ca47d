//! What a guest prints to stdout and stderr: kept (bounded) for the call that printed
//! it, then written to the log tagged with the mount — and, when the call traps, the
//! source of the client's message (a Rust panic or a Python exception prints its own
//! text there; the wasm backtrace only says where).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Bytes kept per call; older output is dropped first.
const KEPT_BYTES: usize = 16 << 10;
/// Characters of guest text a client's error message carries at most.
const MESSAGE_CHARS: usize = 300;

/// One instance's stdout and stderr.
#[derive(Clone, Default)]
pub struct GuestOutput(Arc<Mutex<Vec<u8>>>);

impl GuestOutput {
    /// Everything printed since the last take.
    pub fn take(&self) -> String {
        let bytes = std::mem::take(&mut *self.0.lock().expect("guest output"));
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

impl IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for GuestOutput {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for GuestOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut kept = self.0.lock().expect("guest output");
        kept.extend_from_slice(buf);
        if kept.len() > KEPT_BYTES {
            let excess = kept.len() - KEPT_BYTES;
            kept.drain(..excess);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// What the guest said about its own failure, trimmed for a client: the message of a
/// Rust panic (the lines after "panicked at …:"), else the last line that is not a
/// hint (a Python exception's `Type: text` is its last line).
pub fn own_words(printed: &str) -> Option<String> {
    let lines: Vec<&str> = printed.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let said = match lines.iter().position(|l| l.contains("panicked at")) {
        Some(at) => {
            lines[at + 1..].iter().take_while(|l| !l.starts_with("note:")).copied().collect::<Vec<_>>().join(" ")
        }
        None => lines.iter().rev().find(|l| !l.starts_with("note:")).map(|l| l.to_string()).unwrap_or_default(),
    };
    if said.is_empty() {
        return None;
    }
    Some(match said.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &said[..cut]),
        None => said,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_failure_is_told_in_its_own_words() {
        let rust =
            "\nthread '<unnamed>' panicked at src/lib.rs:20:9:\ndeliberate trap\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(own_words(rust).as_deref(), Some("deliberate trap"));
        let python = "Traceback (most recent call last):\n  File \"app.py\", line 3, in load\nKeyError: 'orders'\n";
        assert_eq!(own_words(python).as_deref(), Some("KeyError: 'orders'"));
        assert_eq!(own_words("\n  \n"), None);
        let long = own_words(&"x".repeat(1000)).unwrap();
        assert_eq!(long.chars().count(), MESSAGE_CHARS + 1, "trimmed, with an ellipsis");
    }
}
