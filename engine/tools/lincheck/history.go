// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// HistoryHeader is the first line of a single-key history file.
const HistoryHeader = `{"rdx_kv_history":1}`

// Op is one client operation on one key, as a history line records it (docs in README.md):
//
//	{"client": 3, "node": "n1", "key": "ctr:1", "op": "incr", "by": 1, "out": 7, "start": 100, "end": 180}
//
// start and end are wall-clock nanoseconds around the call. An operation whose outcome is unknown (the client got
// an error after sending it: a timeout, a broken connection) has no end: it may have taken effect at any time after
// its start, or never. An operation that failed without effect (refused) is not recorded at all.
type Op struct {
	Client int             `json:"client"`
	Node   string          `json:"node,omitempty"`
	Key    string          `json:"key"`
	Kind   string          `json:"op"`
	In     *string         `json:"in,omitempty"`     // set, setnx, getset, cas: the value written
	Expect *string         `json:"expect,omitempty"` // cas: the value the key must hold for the swap
	By     *int64          `json:"by,omitempty"`     // incr: the increment (negative for DECR/DECRBY)
	Out    json.RawMessage `json:"out,omitempty"`    // what the call returned (see Output)
	Start  int64           `json:"start"`
	End    *int64          `json:"end,omitempty"` // absent: outcome unknown
}

// Output is the typed result of an operation.
type Output struct {
	Known bool    // false: the call's outcome is unknown (it may or may not have applied)
	Value *string // get, getset: the value read (nil: absent)
	Int   int64   // incr: the value after the increment; del: keys removed (0 or 1)
	Flag  bool    // setnx, cas: whether it set the key
}

// Input is the typed argument of an operation.
type Input struct {
	Kind   string
	Value  string
	Expect string
	By     int64
}

var kinds = map[string]bool{"get": true, "set": true, "incr": true, "setnx": true, "getset": true, "del": true, "cas": true}

// ReadHistory parses and validates a history; an error names the line and what is wrong with it.
func ReadHistory(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("empty history: want the header line " + HistoryHeader)
	}
	if strings.TrimSpace(sc.Text()) != HistoryHeader {
		return nil, fmt.Errorf("line 1: want the header %s, got %.80q", HistoryHeader, sc.Text())
	}
	var ops []Op
	for line := 2; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		var op Op
		if err := dec.Decode(&op); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if err := op.validate(); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		ops = append(ops, op)
	}
	return ops, sc.Err()
}

func (op *Op) validate() error {
	if !kinds[op.Kind] {
		return fmt.Errorf("op %q is not one of get, set, incr, setnx, getset, del, cas", op.Kind)
	}
	if op.Client < 0 || op.Client > 1<<20 {
		return fmt.Errorf("client %d out of range 0..%d", op.Client, 1<<20)
	}
	if op.Start < 0 || (op.End != nil && *op.End < op.Start) {
		return fmt.Errorf("times: start %d, end %v: want 0 <= start <= end", op.Start, deref(op.End))
	}
	needsIn := op.Kind == "set" || op.Kind == "setnx" || op.Kind == "getset" || op.Kind == "cas"
	if needsIn != (op.In != nil) {
		return fmt.Errorf("%s: field in must be %s", op.Kind, map[bool]string{true: "given", false: "absent"}[needsIn])
	}
	if (op.Kind == "cas") != (op.Expect != nil) {
		return fmt.Errorf("%s: field expect must be %s", op.Kind, map[bool]string{true: "given", false: "absent"}[op.Kind == "cas"])
	}
	if (op.Kind == "incr") != (op.By != nil) {
		return fmt.Errorf("%s: field by must be %s", op.Kind, map[bool]string{true: "given", false: "absent"}[op.Kind == "incr"])
	}
	if op.End == nil {
		if len(op.Out) > 0 {
			return errors.New("an operation without end (outcome unknown) has no out")
		}
		if op.Kind == "get" {
			return errors.New("a get with an unknown outcome changed nothing: leave it out of the history")
		}
		return nil
	}
	_, err := op.Output()
	return err
}

// Output decodes `out` for the operation's kind.
func (op *Op) Output() (Output, error) {
	if op.End == nil {
		return Output{}, nil
	}
	o := Output{Known: true}
	var err error
	switch op.Kind {
	case "get", "getset":
		err = json.Unmarshal(op.Out, &o.Value) // null: absent
		if len(op.Out) == 0 {
			err = errors.New("missing")
		}
	case "del":
		if len(op.Out) == 0 { // the count is not part of what is checked (protocols that do not order a key's writes)
			o.Known = false
			break
		}
		err = json.Unmarshal(op.Out, &o.Int)
		if err == nil && o.Int != 0 && o.Int != 1 {
			err = errors.New("del removes 0 or 1 keys")
		}
	case "incr":
		err = json.Unmarshal(op.Out, &o.Int)
	case "setnx", "cas":
		err = json.Unmarshal(op.Out, &o.Flag)
	case "set":
		if len(op.Out) > 0 {
			err = errors.New("set returns nothing to record")
		}
	}
	if err != nil {
		return o, fmt.Errorf("%s: out %.40q: %v", op.Kind, string(op.Out), err)
	}
	return o, nil
}

// Input is the operation's typed argument.
func (op *Op) Input() Input {
	in := Input{Kind: op.Kind}
	if op.In != nil {
		in.Value = *op.In
	}
	if op.Expect != nil {
		in.Expect = *op.Expect
	}
	if op.By != nil {
		in.By = *op.By
	}
	return in
}

// ReturnTime is the end of the operation, or the end of time when its outcome is unknown (it may take effect at
// any point after its start).
func (op *Op) ReturnTime() int64 {
	if op.End == nil {
		return math.MaxInt64
	}
	return *op.End
}

func deref(p *int64) any {
	if p == nil {
		return "none"
	}
	return *p
}
