//! Page tokens and filtered paging.
//!
//! A token names a cursor space — one listing: the mount, what it lists and under
//! which parent ([`listing`]) — and a backend cursor in it ("after this item"),
//! under an HMAC with the server key. A token that does not verify, or belongs to
//! another listing, restarts the listing: a repeated page is visible to a client, a
//! wrong seek is not.
//!
//! A backend cannot make a listing spin: a page that needs more than a bounded
//! number of backend calls, or a cursor that does not advance, ends in an error.
//!
//! Pages are filled with visible items only: the filler keeps asking the backend
//! for more until the page is full, and hands out the cursor of the last item it
//! served, so a walk never repeats and never skips an item.

use std::future::Future;
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The page size used when a client asks for paging without a size.
pub const DEFAULT_PAGE_SIZE: u32 = 100;
/// The largest page a client may ask for.
pub const MAX_PAGE_SIZE: u32 = 1000;
const MAC_LEN: usize = 16;
/// Backend calls one page may take (a filter hiding almost everything still fits).
const MAX_CALLS_PER_PAGE: usize = 1_000;
/// Backend calls a listing of everything may take (batches of [`MAX_PAGE_SIZE`]).
const MAX_CALLS_PER_LISTING: usize = 100_000;

/// An item's name as a page carries it: shared, so that a page kept by the host
/// (`plugins::read_memo`) hands its names out without copying them.
pub type Name = Arc<str>;

/// The cursor space of one listing: `what` (namespaces, tables, views) under
/// `parent` in the mount whose cursor space is `mount`.
pub fn listing(mount: &str, what: &str, parent: &[String]) -> String {
    format!("{mount}\u{1e}{what}\u{1e}{}", parent.join("\u{1f}"))
}

/// Issues and verifies page tokens.
#[derive(Clone)]
pub struct PageTokens {
    /// The HMAC with the key already absorbed: cloned per token, half the hashing.
    keyed: Hmac<Sha256>,
}

impl PageTokens {
    pub fn new(key: [u8; 32]) -> Self {
        Self { keyed: Hmac::<Sha256>::new_from_slice(&key).expect("any key length") }
    }

    fn mac(&self, payload: &[u8]) -> Vec<u8> {
        let mut mac = self.keyed.clone();
        mac.update(payload);
        mac.finalize().into_bytes()[..MAC_LEN].to_vec()
    }

    /// A token for "after `cursor` in `space`".
    pub fn issue(&self, space: &str, cursor: &str) -> String {
        let mut payload = Vec::with_capacity(space.len() + cursor.len() + 1);
        payload.extend_from_slice(space.as_bytes());
        payload.push(0);
        payload.extend_from_slice(cursor.as_bytes());
        let mac = self.mac(&payload);
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(mac))
    }

    /// The cursor a token carries, if this server issued it for `space`.
    pub fn verify(&self, space: &str, token: &str) -> Option<String> {
        let (payload, mac) = token.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(payload).ok()?;
        let mac = URL_SAFE_NO_PAD.decode(mac).ok()?;
        let mut check = self.keyed.clone();
        check.update(&payload);
        check.verify_truncated_left(&mac).ok()?;
        if mac.len() != MAC_LEN {
            return None;
        }
        let split = payload.iter().position(|b| *b == 0)?;
        if &payload[..split] != space.as_bytes() {
            return None;
        }
        String::from_utf8(payload[split + 1..].to_vec()).ok()
    }
}

/// What a client asked for: everything (no `pageToken`), or one page.
#[derive(Debug, Clone)]
pub enum PageAsk {
    All,
    Page { after: Option<String>, size: u32 },
}

impl PageAsk {
    /// Reads `pageToken` and `pageSize`. Without a token every item is returned; an
    /// empty token starts paging.
    pub fn from_query(tokens: &PageTokens, space: &str, token: Option<&str>, size: Option<u32>) -> Self {
        match token {
            None => PageAsk::All,
            Some(token) => PageAsk::Page {
                after: if token.is_empty() { None } else { tokens.verify(space, token) },
                size: size.unwrap_or(DEFAULT_PAGE_SIZE).clamp(1, MAX_PAGE_SIZE),
            },
        }
    }

    /// The page size; `None` for everything.
    pub fn size(&self) -> Option<u32> {
        match self {
            PageAsk::All => None,
            PageAsk::Page { size, .. } => Some(*size),
        }
    }
}

/// An item of a batch, as the caller's page sees it.
#[derive(Debug)]
pub enum Entry {
    /// Served; the item is its own cursor (a name keyed in the backend's store).
    Served(Name),
    /// Served, with a cursor of its own.
    ServedAt(Name, String),
    /// Not visible to the caller: only its cursor counts.
    Hidden(String),
}

impl Entry {
    /// `item`, with its `cursor` (`None`: the item is its own), served if `visible`.
    pub fn new(item: Name, cursor: Option<String>, visible: bool) -> Self {
        match (visible, cursor) {
            (true, None) => Entry::Served(item),
            (true, Some(cursor)) => Entry::ServedAt(item, cursor),
            (false, cursor) => Entry::Hidden(cursor.unwrap_or_else(|| item.to_string())),
        }
    }
}

/// One batch from a backend, filtered, and whether the listing ended.
pub struct Batch {
    pub entries: Vec<Entry>,
    pub done: bool,
}

/// Where the page last moved: to a cursor, or to the last item served (which is its
/// own cursor, copied only when the page needs it).
enum Moved {
    To(String),
    ToLastServed,
}

/// Fills one page (or everything) with the visible items of the batches `fetch`
/// returns after a cursor. Returns the items and the cursor to resume after, if
/// anything may follow. A backend that makes no progress ends in `stuck(why)`.
pub async fn fill<E, Fut>(
    ask: PageAsk,
    mut fetch: impl FnMut(Option<String>, u32) -> Fut,
    stuck: impl FnOnce(String) -> E,
) -> Result<(Vec<Name>, Option<String>), E>
where
    Fut: Future<Output = Result<Batch, E>>,
{
    let (mut after, want) = match ask {
        PageAsk::All => (None, None),
        PageAsk::Page { after, size } => (after, Some(size as usize)),
    };
    let max_calls = if want.is_some() { MAX_CALLS_PER_PAGE } else { MAX_CALLS_PER_LISTING };
    let mut page = Vec::with_capacity(want.unwrap_or(0));
    for _ in 0..max_calls {
        let before = after.clone();
        let batch_size = match want {
            Some(want) => (want - page.len()).max(1) as u32,
            None => MAX_PAGE_SIZE,
        };
        let batch = fetch(after.clone(), batch_size).await?;
        let returned_items = !batch.entries.is_empty();
        let mut served_to_end = true;
        let mut moved = None;
        for entry in batch.entries {
            if want.is_some_and(|want| page.len() >= want) {
                // The page is full part-way through a batch: resume after the last served item.
                served_to_end = false;
                break;
            }
            moved = Some(match entry {
                Entry::Served(item) => {
                    page.push(item);
                    Moved::ToLastServed
                }
                Entry::ServedAt(item, cursor) => {
                    page.push(item);
                    Moved::To(cursor)
                }
                Entry::Hidden(cursor) => Moved::To(cursor),
            });
        }
        match moved {
            Some(Moved::To(cursor)) => after = Some(cursor),
            Some(Moved::ToLastServed) => after = page.last().map(|name| name.to_string()),
            None => {}
        }
        let finished = batch.done && served_to_end;
        if finished {
            return Ok((page, None));
        }
        if want.is_some_and(|want| page.len() >= want) {
            return Ok((page, after));
        }
        if after.is_none() {
            // A backend that says "not done" but returned nothing would loop forever.
            return Ok((page, None));
        }
        if returned_items && after == before {
            return Err(stuck(format!("its listing cursor did not advance past {before:?}")));
        }
    }
    Err(stuck(format!("its listing took more than {max_calls} calls without filling the page")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_only_for_their_space_and_key() {
        let tokens = PageTokens::new([7; 32]);
        let t = tokens.issue("root", "abc");
        assert_eq!(tokens.verify("root", &t).as_deref(), Some("abc"));
        assert_eq!(tokens.verify("mount:prod", &t), None);
        assert_eq!(PageTokens::new([8; 32]).verify("root", &t), None);
        assert_eq!(tokens.verify("root", "abc"), None);
        let mut forged = t.clone();
        forged.replace_range(0..1, "Z");
        assert_eq!(tokens.verify("root", &forged), None);
    }

    /// A backend of `n` numbered items, paged `batch` at a time.
    async fn walk(n: usize, batch: usize, page_size: u32, visible: impl Fn(&usize) -> bool + Copy) -> Vec<Vec<Name>> {
        // Even items are their own cursors, odd ones carry theirs.
        let fetch = |after: Option<String>, limit: u32| async move {
            let start = after.map(|c| c.parse::<usize>().unwrap() + 1).unwrap_or(0);
            let end = (start + (limit as usize).min(batch)).min(n);
            let entries = (start..end)
                .map(|i| match (visible(&i), i % 2) {
                    (false, _) => Entry::Hidden(i.to_string()),
                    (true, 0) => Entry::Served(i.to_string().into()),
                    (true, _) => Entry::ServedAt(i.to_string().into(), i.to_string()),
                })
                .collect();
            Ok::<_, ()>(Batch { entries, done: end == n })
        };
        let mut pages = vec![];
        let mut after = None;
        loop {
            let (page, next) = fill(PageAsk::Page { after, size: page_size }, fetch, |_| ()).await.unwrap();
            pages.push(page);
            match next {
                Some(c) => after = Some(c),
                None => return pages,
            }
        }
    }

    #[tokio::test]
    async fn a_backend_that_makes_no_progress_ends_the_listing_in_an_error() {
        // The same item, with the same cursor, forever.
        let stuck = |_: Option<String>, _: u32| async {
            Ok::<_, String>(Batch { entries: vec![Entry::Hidden("x".to_string())], done: false })
        };
        for ask in [PageAsk::All, PageAsk::Page { after: None, size: 10 }] {
            let got = fill(ask, stuck, |why| why).await;
            assert!(got.unwrap_err().contains("did not advance"));
        }
        // Ever new cursors, every item hidden: bounded all the same.
        let counter = std::sync::atomic::AtomicUsize::new(0);
        let endless = |_: Option<String>, _: u32| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok::<_, String>(Batch { entries: vec![Entry::Hidden(n.to_string())], done: false }) }
        };
        let got = fill(PageAsk::Page { after: None, size: 10 }, endless, |why| why).await;
        assert!(got.unwrap_err().contains("more than 1000 calls"));
        assert_eq!(counter.load(std::sync::atomic::Ordering::SeqCst), MAX_CALLS_PER_PAGE);
    }

    #[test]
    fn each_listing_has_its_own_space() {
        let tables = listing("root", "tables", &["a".into(), "b".into()]);
        assert_ne!(tables, listing("root", "views", &["a".into(), "b".into()]));
        assert_ne!(tables, listing("root", "tables", &["a".into()]));
        assert_ne!(tables, listing("mount:m", "tables", &["a".into(), "b".into()]));
        let tokens = PageTokens::new([7; 32]);
        let token = tokens.issue(&tables, "t1");
        assert_eq!(tokens.verify(&listing("root", "tables", &["a".into()]), &token), None);
    }

    #[tokio::test]
    async fn filtered_pages_are_full_and_walks_are_exact() {
        for (name, visible) in [
            ("all", (|_: &usize| true) as fn(&usize) -> bool),
            ("first page hidden", |i: &usize| *i >= 10),
            ("middle hidden", |i: &usize| !(20..35).contains(i)),
            ("last page hidden", |i: &usize| *i < 40),
            ("odd only", |i: &usize| i % 2 == 1),
            ("nothing", |_: &usize| false),
        ] {
            let pages = walk(50, 7, 10, visible).await;
            let seen: Vec<usize> = pages.iter().flatten().map(|i| i.parse().unwrap()).collect();
            let expected: Vec<usize> = (0..50).filter(visible).collect();
            assert_eq!(seen, expected, "{name}");
            for page in &pages[..pages.len() - 1] {
                assert_eq!(page.len(), 10, "{name}: every page but the last is full");
            }
        }
    }
}
