// Checks that a recorded history of catalog operations is linearizable, with Porcupine.
//
// The history (JSON on stdin) is a list of operations. Each belongs to one partition
// (`key`): a group of table names (`t0`, `p0` and `p1`, …, the digit is the name's slot)
// that no operation outside it touches, and, for the partition `area`, the namespace
// they live in. Porcupine checks each partition on its own.
//
//		{"client": 3, "key": "pair", "op": "txn", "name": "p0", "to": "p1",
//		 "expect": 17, "new": 42, "expect_to": 5, "new_to": 43,
//		 "call": 1200, "return": 1350, "outcome": "refused", "error": "CommitFailedException"}
//
//	  - `read` observes whether table `name` exists and its main snapshot (-1: none);
//	  - `commit` is a compare-and-set of `name`'s main from `expect` to `new`;
//	  - `txn` is one multi-table transaction: both compare-and-sets (`name`, then `to`
//	    with `expect_to`/`new_to`), all or nothing;
//	  - `create` and `drop` make `name` exist or not; `rename` moves `name` to `to`;
//	  - `nscreate` and `nsdrop` make the partition's namespace exist or not (a drop needs
//	    it empty; a table is created only in a namespace that exists).
//
// `outcome` is "ok", "refused" (with `error`, the reason the server gave: it must hold
// in the state where the operation is linearized, and then nothing changed), "failed"
// (another error: nothing written), or "unknown" (no answer, or
// CommitStateUnknownException: it may or may not have taken effect, at any time after
// its call).
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
	Name     string `json:"name"`
	To       string `json:"to"`
	Expect   int64  `json:"expect"`
	New      int64  `json:"new"`
	ExpectTo int64  `json:"expect_to"`
	NewTo    int64  `json:"new_to"`
	Exists   bool   `json:"exists"`
	Snapshot int64  `json:"snapshot"`
	Call     int64  `json:"call"`
	Return   int64  `json:"return"`
	Outcome  string `json:"outcome"`
	Error    string `json:"error"`
}

// A table name's state: whether it exists, and its main snapshot.
type table struct {
	exists   bool
	snapshot int64
}

var absent = table{exists: false, snapshot: -1}

// A partition's state: its namespace (when the partition has its own) and its names.
type state struct {
	namespaceGone bool
	tables        [3]table
}

var initial = state{tables: [3]table{absent, absent, absent}}

// A name's slot in its partition: its last digit (0 for none: a namespace's operation).
func slot(name string) int {
	if name == "" {
		return 0
	}
	return int(name[len(name)-1]-'0') % 3
}

func (s state) empty() bool {
	for _, t := range s.tables {
		if t.exists {
			return false
		}
	}
	return true
}

// The states an operation with this result can lead to from `s` (none: impossible).
func step(s state, in recorded) []state {
	applied, ok := apply(s, in)
	switch in.Outcome {
	case "unknown":
		if ok {
			return []state{s, applied}
		}
		return []state{s}
	case "ok":
		if !ok {
			return nil
		}
		if in.Op == "read" {
			t := s.tables[slot(in.Name)]
			if in.Exists != t.exists || in.Snapshot != t.snapshot {
				return nil
			}
		}
		return []state{applied}
	case "failed": // nothing written, whatever the state
		return []state{s}
	default: // refused: legal only where the operation could not apply, for the reason given
		if !ok && holds(s, in) {
			return []state{s}
		}
		return nil
	}
}

// What the operation makes of `s`, and whether it can apply there at all.
func apply(s state, in recorded) (state, bool) {
	next := s
	t := s.tables[slot(in.Name)]
	switch in.Op {
	case "read":
		return s, true
	case "create":
		next.tables[slot(in.Name)] = table{exists: true, snapshot: -1}
		return next, !s.namespaceGone && !t.exists
	case "drop":
		next.tables[slot(in.Name)] = absent
		return next, t.exists
	case "rename":
		to := s.tables[slot(in.To)]
		next.tables[slot(in.Name)] = absent
		next.tables[slot(in.To)] = t
		return next, t.exists && !to.exists
	case "commit":
		next.tables[slot(in.Name)] = table{exists: true, snapshot: in.New}
		return next, t.exists && t.snapshot == in.Expect
	case "txn":
		to := s.tables[slot(in.To)]
		next.tables[slot(in.Name)] = table{exists: true, snapshot: in.New}
		next.tables[slot(in.To)] = table{exists: true, snapshot: in.NewTo}
		return next, t.exists && t.snapshot == in.Expect && to.exists && to.snapshot == in.ExpectTo
	case "nscreate":
		next.namespaceGone = false
		return next, s.namespaceGone
	case "nsdrop":
		next.namespaceGone = true
		return next, !s.namespaceGone && s.empty()
	}
	panic("unknown operation " + in.Op)
}

// Whether the reason a refusal gave holds in `s`.
func holds(s state, in recorded) bool {
	t := s.tables[slot(in.Name)]
	switch in.Error {
	case "AlreadyExistsException":
		switch in.Op {
		case "create":
			return t.exists
		case "rename":
			return s.tables[slot(in.To)].exists
		case "nscreate":
			return !s.namespaceGone
		}
	case "NoSuchTableException":
		if in.Op == "txn" {
			return !t.exists || !s.tables[slot(in.To)].exists
		}
		return !t.exists
	case "NoSuchNamespaceException":
		return s.namespaceGone
	case "NamespaceNotEmptyException":
		return !s.empty()
	case "CommitFailedException":
		switch in.Op {
		case "commit":
			return t.snapshot != in.Expect
		case "txn":
			return t.snapshot != in.Expect || s.tables[slot(in.To)].snapshot != in.ExpectTo
		}
	}
	return false
}

func describe(r recorded) string {
	switch r.Op {
	case "read":
		return fmt.Sprintf("%s read exists=%v main=%d", r.Name, r.Exists, r.Snapshot)
	case "commit":
		return fmt.Sprintf("%s commit %d→%d: %s %s", r.Name, r.Expect, r.New, r.Outcome, r.Error)
	case "txn":
		return fmt.Sprintf("txn %s %d→%d, %s %d→%d: %s %s", r.Name, r.Expect, r.New, r.To, r.ExpectTo, r.NewTo, r.Outcome, r.Error)
	case "rename":
		return fmt.Sprintf("rename %s→%s: %s %s", r.Name, r.To, r.Outcome, r.Error)
	case "nscreate", "nsdrop":
		return fmt.Sprintf("%s %s: %s %s", r.Key, r.Op, r.Outcome, r.Error)
	}
	return fmt.Sprintf("%s %s: %s %s", r.Name, r.Op, r.Outcome, r.Error)
}

// The operations of each partition.
func byKey(history []porcupine.Operation) map[string][]porcupine.Operation {
	partitions := map[string][]porcupine.Operation{}
	for _, op := range history {
		key := op.Input.(recorded).Key
		partitions[key] = append(partitions[key], op)
	}
	return partitions
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
			partitions := [][]porcupine.Operation{}
			for _, ops := range byKey(history) {
				partitions = append(partitions, ops)
			}
			return partitions
		},
		Init: func() []interface{} { return []interface{}{initial} },
		Step: func(s, input, _ interface{}) []interface{} {
			next := step(s.(state), input.(recorded))
			out := make([]interface{}, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Equal:             func(a, b interface{}) bool { return a.(state) == b.(state) },
		DescribeOperation: func(input, _ interface{}) string { return describe(input.(recorded)) },
		DescribeState: func(s interface{}) string {
			st := s.(state)
			return fmt.Sprintf("namespace gone=%v %v", st.namespaceGone, st.tables)
		},
	}
	model := nondeterministic.ToModel()
	result, info := porcupine.CheckOperationsVerbose(model, operations, 60*time.Second)
	switch result {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations\n", len(operations))
	case porcupine.Illegal:
		fmt.Printf("anomaly: %d operations are not linearizable\n", len(operations))
		for key, ops := range byKey(operations) {
			if porcupine.CheckOperationsTimeout(model, ops, 10*time.Second) == porcupine.Illegal {
				fmt.Printf("not linearizable: the operations on %s\n", key)
			}
		}
		if len(os.Args) > 1 {
			if err := porcupine.VisualizePath(model, info, os.Args[1]); err == nil {
				fmt.Println("visualization:", os.Args[1])
			}
		}
		os.Exit(1)
	default:
		fmt.Printf("undecided within the time limit: %d operations\n", len(operations))
		for key, ops := range byKey(operations) {
			unknown := 0
			for _, op := range ops {
				if op.Input.(recorded).Outcome == "unknown" {
					unknown++
				}
			}
			fmt.Printf("%s: %d operations, %d of unknown outcome\n", key, len(ops), unknown)
		}
		os.Exit(2)
	}
}
