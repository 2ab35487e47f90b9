// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"fmt"
	"strconv"

	"github.com/anishathalye/porcupine"
)

// register is the sequential specification of one key: absent, or holding a string (Redis semantics: INCR reads
// an absent key as 0 and fails on a value that is not an integer, so a recorded INCR result implies an integer).
type register struct {
	present bool
	value   string
}

// call is what Porcupine sees as an operation's input: the key (shown in the visualization), the argument, and for
// the sequential-reads model the client (its session) and whether the call returned (Porcupine's Step sees neither
// the client nor the times).
type call struct {
	Key    string
	In     Input
	Client int
	Start  int64 // when it began: with Client, which call of the client's session it is
	Done   bool  // the call returned (it has an end): the client has seen its effect
}

func step(state, input, output any) (bool, any) {
	s := state.(register)
	in := input.(call).In
	out := output.(Output)
	switch in.Kind {
	case "get":
		return !out.Known || sameValue(s, out.Value), s
	case "set":
		return true, register{true, in.Value}
	case "getset":
		return !out.Known || sameValue(s, out.Value), register{true, in.Value}
	case "setnx":
		if s.present {
			return !out.Known || !out.Flag, s
		}
		return !out.Known || out.Flag, register{true, in.Value}
	case "cas": // swaps only when the key holds the expected value (an absent key never does)
		if s.present && s.value == in.Expect {
			return !out.Known || out.Flag, register{true, in.Value}
		}
		return !out.Known || !out.Flag, s
	case "del":
		removed := int64(0)
		if s.present {
			removed = 1
		}
		return !out.Known || out.Int == removed, register{}
	case "incr":
		cur := int64(0)
		if s.present {
			n, err := strconv.ParseInt(s.value, 10, 64)
			if err != nil { // the server refuses it: a recorded result is impossible, an unknown outcome had no effect
				return !out.Known, s
			}
			cur = n
		}
		next := cur + in.By
		return !out.Known || out.Int == next, register{true, strconv.FormatInt(next, 10)}
	}
	return false, s
}

func sameValue(s register, v *string) bool {
	if v == nil {
		return !s.present
	}
	return s.present && s.value == *v
}

// kvModel is one register: the checker partitions a history by key itself (linearizability is per key: a history
// is linearizable iff each key's sub-history is) and checks each key on its own.
var kvModel = porcupine.Model{
	Init:                      func() any { return register{} },
	Step:                      step,
	DescribeOperation:         describeOperation,
	DescribeState:             func(state any) string { return state.(register).String() },
	DescribeOperationMetadata: describeMetadata,
}

// Consistency is a model a history is checked against, by the name the report gives it. Model gives the model for
// one key's history (the sequential-reads model depends on it).
type Consistency struct {
	Name  string
	Model func(history []porcupine.Operation) porcupine.Model
	// A stronger consistency, tried first: a key whose history it accepts is accepted without this one's search,
	// which can be much slower (sequential.go).
	ImpliedBy *Consistency
	// Validate, when set, refuses a history the model cannot check (Check's precondition).
	Validate func(ops []Op) error
}

var (
	// Linearizable: every operation, reads included, takes effect at one point within its interval.
	Linearizable = Consistency{Name: "linearizability",
		Model: func([]porcupine.Operation) porcupine.Model { return kvModel }}
	// SequentialReads: writes and read-modify-writes are linearizable; a read may return an older state of the key
	// than the latest, but none older than what its client has already written or read (sequential.go). Each
	// client's calls must come one after another (its session).
	// A linearizable history is one (its linearization is the write order, and each read returns the latest state
	// at its point, which its client's earlier calls precede), so a key whose history is linearizable passes at
	// once: the common case, and a cheaper search.
	SequentialReads = Consistency{Name: "sequential reads", Model: seqModel, ImpliedBy: &Linearizable,
		Validate: sequentialSessions}
)

// consistencies are the values of --reads.
var consistencies = map[string]Consistency{"linearizable": Linearizable, "sequential": SequentialReads}

func describeOperation(input, output any) string {
	c, out := input.(call), output.(Output)
	arg := ""
	switch c.In.Kind {
	case "set", "setnx", "getset":
		arg = fmt.Sprintf("(%q)", clip(c.In.Value))
	case "incr":
		arg = fmt.Sprintf("(%+d)", c.In.By)
	case "cas":
		arg = fmt.Sprintf("(%q -> %q)", clip(c.In.Expect), clip(c.In.Value))
	}
	res := "?"
	if out.Known {
		switch c.In.Kind {
		case "get", "getset":
			res = "nil"
			if out.Value != nil {
				res = fmt.Sprintf("%q", clip(*out.Value))
			}
		case "incr", "del":
			res = strconv.FormatInt(out.Int, 10)
		case "setnx", "cas":
			res = strconv.FormatBool(out.Flag)
		case "set":
			res = "OK"
		}
	}
	return fmt.Sprintf("%s %s%s -> %s", c.Key, c.In.Kind, arg, res)
}

func describeMetadata(info any) string {
	if info == nil {
		return ""
	}
	return fmt.Sprint(info)
}

func (s register) String() string {
	if s.present {
		return fmt.Sprintf("%q", clip(s.value))
	}
	return "absent"
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:21] + "..."
	}
	return s
}
