//! The authoring kit behind `rustberg plugin`: `check` (what a component imports and
//! exports, judged against a mount), `new` (a ready-to-build backend, gate or sink
//! project) and `test` (the conformance suite of a backend; a gate's or a sink's cases).

pub mod check;
pub mod conformance;
pub mod hook_test;
pub mod scaffold;
