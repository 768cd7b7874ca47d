//! A gate that misbehaves by the name of what it is asked about: `trap` panics, `loop`
//! never returns; everything else is allowed. For the tests that a failing gate
//! refuses, naming itself, and fails only the change it was asked about.

wit_bindgen::generate!({ world: "gate", path: "../../../wit" });

use exports::rustberg::catalog::admission_gate::{Guest, Proposal, Verdict};

struct Unruly;

impl Guest for Unruly {
    fn admit(proposal: Proposal) -> Verdict {
        match proposal.name.as_str() {
            "trap" => panic!("deliberate trap in the gate"),
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            _ => Verdict::Allow,
        }
    }
}

export!(Unruly);
