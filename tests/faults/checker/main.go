// Checks that a recorded history of catalog operations is linearizable, with Porcupine.
//
// The history (JSON on stdin) is a list of operations, each on one table name:
//
//	{"client": 3, "key": "db.t1", "op": "commit", "expect": 17, "new": 42,
//	 "call": 1200, "return": 1350, "outcome": "ok"}
//
// - `read` observes whether the table exists and its main snapshot (-1: none);
// - `commit` is a compare-and-set of main from `expect` to `new`;
// - `create` and `drop` make the name exist or not.
//
// `outcome` is "ok", "refused" (its precondition did not hold: a create's name taken, a
// drop's name free, a commit's main moved), "failed" (another error: nothing written),
// or "unknown" (no answer, or CommitStateUnknownException: it may or may not have taken
// effect, at any time after its call).
// Prints the verdict; exits 0 when linearizable, 1 on an anomaly (writing a
// visualization to the path given as the first argument, if any), 2 when undecided
// within the time limit.
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

type recorded struct {
	Client   int    `json:"client"`
	Key      string `json:"key"`
	Op       string `json:"op"`
	Expect   int64  `json:"expect"`
	New      int64  `json:"new"`
	Exists   bool   `json:"exists"`
	Snapshot int64  `json:"snapshot"`
	Call     int64  `json:"call"`
	Return   int64  `json:"return"`
	Outcome  string `json:"outcome"`
}

// A table name's state: whether it exists, and its main snapshot.
type table struct {
	exists   bool
	snapshot int64
}

var absent = table{exists: false, snapshot: -1}

// The states an operation with this result can lead to from `s` (none: impossible).
func step(s table, in recorded) []table {
	applied, ok := apply(s, in)
	switch in.Outcome {
	case "unknown":
		if ok {
			return []table{s, applied}
		}
		return []table{s}
	case "ok":
		if ok && (in.Op != "read" || (in.Exists == s.exists && in.Snapshot == s.snapshot)) {
			return []table{applied}
		}
		return nil
	case "failed": // nothing written, whatever the state
		return []table{s}
	default: // refused: legal only where the operation could not apply
		if !ok {
			return []table{s}
		}
		return nil
	}
}

// What the operation makes of `s`, and whether it can apply there at all.
func apply(s table, in recorded) (table, bool) {
	switch in.Op {
	case "read":
		return s, true
	case "create":
		return table{exists: true, snapshot: -1}, !s.exists
	case "drop":
		return absent, s.exists
	case "commit":
		return table{exists: true, snapshot: in.New}, s.exists && s.snapshot == in.Expect
	}
	panic("unknown operation " + in.Op)
}

func main() {
	var history []recorded
	if err := json.NewDecoder(os.Stdin).Decode(&history); err != nil {
		fmt.Fprintln(os.Stderr, "reading the history:", err)
		os.Exit(3)
	}
	operations := make([]porcupine.Operation, 0, len(history))
	for _, r := range history {
		ret := r.Return
		if r.Outcome == "unknown" {
			// May take effect at any time after its call.
			ret = math.MaxInt64
		}
		operations = append(operations, porcupine.Operation{ClientId: r.Client, Input: r, Call: r.Call, Output: nil, Return: ret})
	}
	nondeterministic := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range history {
				key := op.Input.(recorded).Key
				if _, seen := byKey[key]; !seen {
					keys = append(keys, key)
				}
				byKey[key] = append(byKey[key], op)
			}
			partitions := make([][]porcupine.Operation, 0, len(keys))
			for _, key := range keys {
				partitions = append(partitions, byKey[key])
			}
			return partitions
		},
		Init: func() []interface{} { return []interface{}{absent} },
		Step: func(state, input, _ interface{}) []interface{} {
			next := step(state.(table), input.(recorded))
			out := make([]interface{}, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(table) == b.(table) },
		DescribeOperation: func(input, _ interface{}) string {
			r := input.(recorded)
			switch r.Op {
			case "read":
				return fmt.Sprintf("%s read exists=%v main=%d", r.Key, r.Exists, r.Snapshot)
			case "commit":
				return fmt.Sprintf("%s commit %d→%d: %s", r.Key, r.Expect, r.New, r.Outcome)
			}
			return fmt.Sprintf("%s %s: %s", r.Key, r.Op, r.Outcome)
		},
		DescribeState: func(state interface{}) string {
			s := state.(table)
			return fmt.Sprintf("exists=%v main=%d", s.exists, s.snapshot)
		},
	}
	model := nondeterministic.ToModel()
	result, info := porcupine.CheckOperationsVerbose(model, operations, 60*time.Second)
	switch result {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations\n", len(operations))
	case porcupine.Illegal:
		fmt.Printf("anomaly: %d operations are not linearizable\n", len(operations))
		if len(os.Args) > 1 {
			if err := porcupine.VisualizePath(model, info, os.Args[1]); err == nil {
				fmt.Println("visualization:", os.Args[1])
			}
		}
		os.Exit(1)
	default:
		fmt.Printf("undecided within the time limit: %d operations\n", len(operations))
		os.Exit(2)
	}
}
