//! A backend's listings. Where the component exports `key-listings` and its mount
//! grants a `kv` space, the backend only names the prefix its items are keyed under
//! and the host scans those keys itself: no item crosses the boundary (a page of 100
//! names copied into the guest and back cost ten times the rest of the request).
//! Otherwise the backend's own `list-*` export answers. Where the backend's answers are
//! kept while its space is unchanged (`read_memo`), so are the pages scanned: a kept
//! page hands out its names without copying them.
//!
//! [`Backend::list`] gives a page as names under the listing's parent, an item's
//! cursor only where it is not its name (what the REST listings need);
//! `list_namespaces`, `list_tables` and `list_views` give the contract's own page
//! types (what the location backfill and the conformance cases read).

use std::sync::Arc;

use super::calls::{Backend, ENTRY_WEIGHT};
use super::read_memo::{question, Weigh};
use crate::paging::Name;
use crate::sandbox::bindings::{in_series, KeyListings};
use crate::sandbox::bindings::{NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, WitError};
use crate::sandbox::pool::Exports;
use crate::sandbox::{BackendError, BackendErrorKind, MAX_SCAN_ROWS};
use crate::storage::kv::{prefix_end, KvStore};

/// What is listed: the children of a namespace (the top level when `None`), or the
/// tables or views in one.
#[derive(Debug, Clone)]
pub enum Listing {
    Namespaces(Option<Vec<String>>),
    Tables(Vec<String>),
    Views(Vec<String>),
}

/// The names of one page scanned from a backend's keys, and whether the listing ends
/// with it.
#[derive(Clone)]
pub struct ScannedPage {
    names: Arc<[Name]>,
    done: bool,
}

impl Weigh for ScannedPage {
    fn weight(&self) -> usize {
        // Each name: its text, its shared header and its place in the page.
        ENTRY_WEIGHT + self.names.iter().map(|name| name.len() + 32).sum::<usize>()
    }
}

/// One page of a listing.
#[derive(Debug)]
pub struct Listed {
    pub items: Vec<ListedItem>,
    /// True when no item follows the last one.
    pub done: bool,
}

/// An item: its name (a namespace's last level), and its cursor where the backend
/// gave one that is not the name. No name: the backend listed something that is not
/// a child of the parent (an older remote catalog may list every descendant), which
/// is not shown, though its cursor counts.
#[derive(Debug)]
pub struct ListedItem {
    pub name: Option<Name>,
    pub cursor: Option<String>,
}

fn key_listings(exports: &Exports) -> Result<&KeyListings, WitError> {
    exports.key_listings.as_ref().ok_or_else(|| WitError::Unsupported("the backend exports no key-listings".into()))
}

impl Listing {
    /// The export that serves it, as the metrics name it.
    fn export_name(&self) -> &'static str {
        match self {
            Listing::Namespaces(_) => "list_namespaces",
            Listing::Tables(_) => "list_tables",
            Listing::Views(_) => "list_views",
        }
    }
}

impl Backend {
    /// One page of `listing`.
    pub async fn list(&self, listing: &Listing, page: PageRequest) -> Result<Listed, BackendError> {
        if let Some(space) = self.listed_space() {
            return self.list_keys(space, listing, &page).await;
        }
        match listing {
            Listing::Namespaces(parent) => {
                let listed = self.export_namespaces(parent.clone(), page).await?;
                let parent = parent.as_deref().unwrap_or_default();
                let mut items = Vec::with_capacity(listed.items.len());
                for NamespaceEntry { mut namespace, cursor } in listed.items {
                    let child = namespace.len() == parent.len() + 1 && namespace[..parent.len()] == *parent;
                    if !child {
                        tracing::debug!(mount = self.label(), ?namespace, ?parent, "listed as a child: not shown");
                    }
                    let name = namespace.pop().filter(|_| child).map(Name::from);
                    items.push(ListedItem { name, cursor: Some(cursor) });
                }
                Ok(Listed { items, done: listed.done })
            }
            Listing::Tables(ns) | Listing::Views(ns) => {
                let listed = self.export_members(listing, ns.clone(), page).await?;
                let items =
                    listed.items.into_iter().map(|e| ListedItem { name: Some(e.name.into()), cursor: Some(e.cursor) });
                Ok(Listed { items: items.collect(), done: listed.done })
            }
        }
    }

    /// Lists child namespaces of `parent`, in the contract's page type.
    pub async fn list_namespaces(
        &self,
        parent: Option<Vec<String>>,
        page: PageRequest,
    ) -> Result<NamespacePage, BackendError> {
        let Some(space) = self.listed_space() else { return self.export_namespaces(parent, page).await };
        let listing = Listing::Namespaces(parent);
        let listed = self.list_keys(space, &listing, &page).await?;
        let Listing::Namespaces(parent) = listing else { unreachable!("built above") };
        let parent = parent.unwrap_or_default();
        // Scanned keys are all names, their own cursors.
        let items = listed.items.into_iter().filter_map(|item| item.name).map(|name| {
            let mut namespace = Vec::with_capacity(parent.len() + 1);
            namespace.extend_from_slice(&parent);
            namespace.push(name.to_string());
            NamespaceEntry { namespace, cursor: name.to_string() }
        });
        Ok(NamespacePage { items: items.collect(), done: listed.done })
    }

    /// Lists table names in a namespace, in the contract's page type.
    pub async fn list_tables(&self, ns: Vec<String>, page: PageRequest) -> Result<NamePage, BackendError> {
        self.list_members(Listing::Tables(ns), page).await
    }

    /// Lists view names in a namespace, in the contract's page type.
    pub async fn list_views(&self, ns: Vec<String>, page: PageRequest) -> Result<NamePage, BackendError> {
        self.list_members(Listing::Views(ns), page).await
    }

    async fn list_members(&self, listing: Listing, page: PageRequest) -> Result<NamePage, BackendError> {
        let Some(space) = self.listed_space() else {
            let (Listing::Tables(ns) | Listing::Views(ns)) = &listing else { unreachable!("members") };
            return self.export_members(&listing, ns.clone(), page).await;
        };
        let listed = self.list_keys(space, &listing, &page).await?;
        let items = listed
            .items
            .into_iter()
            .filter_map(|item| item.name)
            .map(|name| NameEntry { cursor: name.to_string(), name: name.to_string() });
        Ok(NamePage { items: items.collect(), done: listed.done })
    }

    async fn export_namespaces(
        &self,
        parent: Option<Vec<String>>,
        page: PageRequest,
    ) -> Result<NamespacePage, BackendError> {
        self.invoke("list_namespaces", None, move |store, exports| {
            Box::pin(async move {
                in_series!(&exports.backend, |world| {
                    world.rustberg_catalog_backend().call_list_namespaces(store, parent.as_ref(), &page).await
                })
            })
        })
        .await
    }

    async fn export_members(
        &self,
        listing: &Listing,
        ns: Vec<String>,
        page: PageRequest,
    ) -> Result<NamePage, BackendError> {
        let views = matches!(listing, Listing::Views(_));
        self.invoke(listing.export_name(), None, move |store, exports| {
            Box::pin(async move {
                in_series!(&exports.backend, |world| {
                    let backend = world.rustberg_catalog_backend();
                    match views {
                        false => backend.call_list_tables(store, &ns, &page).await,
                        true => backend.call_list_views(store, &ns, &page).await,
                    }
                })
            })
        })
        .await
    }

    /// A page of `listing` scanned from the keys under the prefix the backend names, or
    /// the one kept since the space last changed.
    async fn list_keys(&self, space: &KvStore, listing: &Listing, page: &PageRequest) -> Result<Listed, BackendError> {
        let prefix = self.prefix(listing).await?;
        let scan = || self.scan_names(space, &prefix, page);
        let scanned = match &self.memo {
            Some(memo) => memo.pages.answer(asked(listing, Some(page)), scan).await?,
            None => scan().await?,
        };
        let items = scanned.names.iter().map(|name| ListedItem { name: Some(name.clone()), cursor: None }).collect();
        Ok(Listed { items, done: scanned.done })
    }

    /// The prefix `listing` is keyed under, or the one kept since the space last changed.
    async fn prefix(&self, listing: &Listing) -> Result<Vec<u8>, BackendError> {
        let Some(memo) = &self.memo else { return self.call_prefix(listing).await };
        memo.prefixes.answer(asked(listing, None), || self.call_prefix(listing)).await
    }

    /// Asks the backend for the prefix `listing` is keyed under.
    async fn call_prefix(&self, listing: &Listing) -> Result<Vec<u8>, BackendError> {
        let asked = listing.clone();
        self.invoke(listing.export_name(), None, move |store, exports| {
            Box::pin(async move {
                let listings = match key_listings(exports) {
                    Ok(listings) => listings,
                    Err(e) => return Ok(Err(e)),
                };
                in_series!(listings, |listings| match &asked {
                    Listing::Namespaces(parent) => listings.call_namespaces(store, parent.as_ref()).await,
                    Listing::Tables(ns) => listings.call_tables(store, ns).await,
                    Listing::Views(ns) => listings.call_views(store, ns).await,
                })
            })
        })
        .await
    }

    /// One page of the names keyed under `prefix` (the key tails), resuming at the
    /// first key after `prefix + cursor`, and whether the listing ends with it.
    async fn scan_names(
        &self,
        space: &KvStore,
        prefix: &[u8],
        page: &PageRequest,
    ) -> Result<ScannedPage, BackendError> {
        let start = match &page.after {
            Some(cursor) => [prefix, cursor.as_bytes(), &[0]].concat(),
            None => prefix.to_vec(),
        };
        let limit = (page.limit.max(1) as usize).min(MAX_SCAN_ROWS - 1);
        let mut names = Vec::with_capacity(limit.min(1000) + 1);
        let mut not_a_name = None;
        // One extra key tells whether anything follows the page.
        let scanned = space
            .scan_keys(&start, prefix_end(prefix).as_deref(), limit + 1, |key| {
                match key.strip_prefix(prefix).filter(|tail| !tail.is_empty()).map(std::str::from_utf8) {
                    Some(Ok(name)) => names.push(Name::from(name)),
                    _ => _ = not_a_name.get_or_insert_with(|| String::from_utf8_lossy(key).into_owned()),
                }
            })
            .await;
        let result = match (scanned, not_a_name) {
            (Err(e), _) => Err(BackendError {
                label: self.label().to_string(),
                kind: BackendErrorKind::Unavailable,
                message: e.to_string(),
            }),
            (Ok(()), Some(key)) => Err(self.misbehaved(format!(
                "the key {key:?} under a listing's prefix is not a name (UTF-8, after the prefix)"
            ))),
            (Ok(()), None) => {
                let done = names.len() <= limit;
                names.truncate(limit);
                Ok(ScannedPage { names: names.into(), done })
            }
        };
        self.record(&result);
        result
    }

    fn misbehaved(&self, message: String) -> BackendError {
        BackendError { label: self.label().to_string(), kind: BackendErrorKind::Internal, message }
    }
}

/// `listing` as a memo question, with the page asked of it if any (its levels are all
/// strings, so no question of one listing is another's).
fn asked(listing: &Listing, page: Option<&PageRequest>) -> String {
    let (kind, levels) = match listing {
        Listing::Namespaces(parent) => ("n", parent.as_deref().unwrap_or_default()),
        Listing::Tables(ns) => ("t", ns.as_slice()),
        Listing::Views(ns) => ("v", ns.as_slice()),
    };
    let limit = page.map(|p| p.limit.to_string());
    let page = page.into_iter().flat_map(|p| [None, limit.as_deref(), p.after.as_deref()]);
    question([Some(kind)].into_iter().chain(levels.iter().map(|level| Some(level.as_str()))).chain(page))
}
