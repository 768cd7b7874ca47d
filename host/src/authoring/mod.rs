//! The authoring kit behind `rustberg plugin`: `check` (what a component imports and
//! exports, judged against a mount), `new` (a ready-to-build backend project) and
//! `test` (the conformance suite).

pub mod check;
pub mod conformance;
pub mod scaffold;
