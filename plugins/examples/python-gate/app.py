"""An admission gate in Python: every table and view is created with an `owner`
property, and nothing named `*_tmp` lands in a mount listed in `protected_mounts`.

Its `[gates.<name>.config]` may set `required_property` (default `owner`) and
`protected_mounts` (comma-separated, default none). A gate is asked after the caller
was authorized and before anything is written; it keeps nothing between calls.
"""

from wit_world import exports
from wit_world.exports.admission_gate import Proposal, Verdict_Allow, Verdict_Refuse
from wit_world.imports import config

CREATES = ("create-table", "create-view")


class AdmissionGate(exports.AdmissionGate):
    def admit(self, proposal: Proposal):
        required = config.get("required_property") or "owner"
        if proposal.operation in CREATES:
            value = dict(proposal.properties).get(required, "")
            if not value.strip():
                kind = proposal.operation.removeprefix("create-")
                return Verdict_Refuse(f"a {kind} needs the property `{required}`")
        protected = [m.strip() for m in (config.get("protected_mounts") or "").split(",") if m.strip()]
        if proposal.mount in protected and proposal.name.endswith("_tmp"):
            return Verdict_Refuse(f"no scratch table (`*_tmp`) in `{proposal.mount}`")
        return Verdict_Allow()
