#!/usr/bin/env bash
# Runs Iceberg's REST Compatibility Kit against a running catalog:
#   bash tests/java/rck.sh URL CLIENT_ID:SECRET|- [WAREHOUSE]
# WAREHOUSE is sent as `?warehouse=` to /v1/config (Rustberg: a mount's name targets that
# mount). Extra `CATALOG_*` variables pass through as catalog properties, `RCK_*` ones as
# the suite's rck.* switches (RCK_REQUIRES_NAMESPACE_CREATE=true -> rck.requires-namespace-create).
# The last line is `N passed, N failed, N skipped`; the exit code is non-zero on a failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
url="${1:?usage: rck.sh URL CLIENT_ID:SECRET [WAREHOUSE]}"
credential="${2:?usage: rck.sh URL CLIENT_ID:SECRET [WAREHOUSE]}"
warehouse="${3:-}"

# A build folder per run, so that runs against several targets may overlap.
work="$(mktemp -d "${TMPDIR:-/tmp}/rustberg-rck.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$here/pom.xml" "$here/src" "$work/"

export CATALOG_URI="$url"
# `-`: a catalog that takes no credential (the client then asks for no token).
[ "$credential" != "-" ] && export CATALOG_CREDENTIAL="$credential"
[ -n "$warehouse" ] && export CATALOG_WAREHOUSE="$warehouse"

switches=(-Drck.requires-namespace-create=true)
while IFS='=' read -r name value; do
  [ -n "$name" ] || continue
  key="$(echo "${name#RCK_}" | tr 'A-Z' 'a-z' | sed 's/__/-/g; s/_/-/g')"
  switches+=("-Drck.$key=$value")
done < <(env | grep '^RCK_' || true)

set +e
mvn -B -q -f "$work/pom.xml" ${MAVEN_OPTS_RCK:-} "${switches[@]}" test > "$work/maven.log" 2>&1
status=$?
set -e

reports=("$work"/target/surefire-reports/TEST-*.xml)
if [ ! -e "${reports[0]}" ]; then
  cat "$work/maven.log" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
# Each test that did not pass, with the first line of its reason.
set +e
python3 - "${reports[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
tests = failed = skipped = 0
for path in sys.argv[1:]:
    for case in ET.parse(path).getroot().iter("testcase"):
        tests += 1
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is None:
                continue
            lines = [l.strip() for l in (el.get("message") or el.text or "").splitlines() if l.strip()]
            reason = " / ".join(lines[:6])[:600]
            if kind == "skipped":
                skipped += 1
                print(f"SKIPPED {case.get('classname').rsplit('.', 1)[-1]}.{case.get('name')}: {reason}")
            else:
                failed += 1
                print(f"FAILED  {case.get('classname').rsplit('.', 1)[-1]}.{case.get('name')}: {reason}")
            break
print(f"{tests - failed - skipped} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
py=$?
set -e
[ "$py" -eq 0 ] && [ "$status" -ne 0 ] && { tail -n 40 "$work/maven.log" >&2; exit "$status"; }
exit "$py"
