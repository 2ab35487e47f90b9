// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func history(t *testing.T, lines ...string) []Op {
	t.Helper()
	ops, err := ReadHistory(strings.NewReader(HistoryHeader + "\n" + strings.Join(lines, "\n")))
	if err != nil {
		t.Fatalf("history: %v", err)
	}
	return ops
}

func TestLinearizableHistories(t *testing.T) {
	for name, lines := range map[string][]string{
		"sequential": {
			`{"client":0,"key":"a","op":"get","out":null,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"incr","by":-3,"out":-2,"start":4,"end":5}`,
			`{"client":0,"key":"a","op":"get","out":"-2","start":6,"end":7}`,
			`{"client":0,"key":"a","op":"getset","in":"x","out":"-2","start":8,"end":9}`,
			`{"client":0,"key":"a","op":"setnx","in":"y","out":false,"start":10,"end":11}`,
			`{"client":0,"key":"a","op":"del","out":1,"start":12,"end":13}`,
			`{"client":0,"key":"a","op":"setnx","in":"y","out":true,"start":14,"end":15}`,
			`{"client":0,"key":"a","op":"set","in":"z","start":16,"end":17}`,
			`{"client":0,"key":"a","op":"get","out":"z","start":18,"end":19}`,
			`{"client":0,"key":"a","op":"cas","expect":"q","in":"w","out":false,"start":20,"end":21}`,
			`{"client":0,"key":"a","op":"cas","expect":"z","in":"w","out":true,"start":22,"end":23}`,
			`{"client":0,"key":"a","op":"get","out":"w","start":24,"end":25}`,
			`{"client":0,"key":"b","op":"cas","expect":"","in":"w","out":false,"start":26,"end":27}`,
		},
		// Two concurrent CASes from one value: one swaps, the other then fails.
		"concurrent cas": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"cas","expect":"1","in":"2","out":false,"start":2,"end":10}`,
			`{"client":2,"key":"a","op":"cas","expect":"1","in":"3","out":true,"start":3,"end":9}`,
			`{"client":0,"key":"a","op":"get","out":"3","start":11,"end":12}`,
		},
		// A read concurrent with a write may see either value.
		"concurrent read": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":10}`,
			`{"client":1,"key":"a","op":"get","out":null,"start":5,"end":6}`,
			`{"client":2,"key":"a","op":"get","out":"1","start":7,"end":8}`,
		},
		// A write whose outcome is unknown may take effect any time after its start, or never.
		"unknown outcome applied": {
			`{"client":0,"key":"a","op":"incr","by":1,"start":0}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":50,"end":60}`,
		},
		"unknown outcome not applied": {
			`{"client":0,"key":"a","op":"incr","by":1,"start":0}`,
			`{"client":1,"key":"a","op":"get","out":null,"start":50,"end":60}`,
		},
		// An INCR of a string is refused by the server: with an unknown outcome it changed nothing.
		"unknown incr of a string": {
			`{"client":0,"key":"a","op":"set","in":"abc","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"start":2}`,
			`{"client":0,"key":"a","op":"get","out":"abc","start":3,"end":4}`,
		},
		// A del whose count is not checked (abd) still removes the key within its interval.
		"del without a count": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":4,"end":5}`,
		},
		// Keys are independent.
		"two keys": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"b","op":"get","out":null,"start":2,"end":3}`,
		},
	} {
		// Sequential reads only relax linearizability: a linearizable history is legal under both.
		for _, model := range []Consistency{Linearizable, SequentialReads} {
			r := Check(history(t, lines...), model, time.Minute)
			if !r.OK || len(r.Illegal) != 0 || r.Model != model.Name {
				t.Errorf("%s: %+v, want legal under %s", name, r, model.Name)
			}
		}
	}
}

// The visualization shows the shortest failing prefix: a violation early in a long history is shown with the
// operations up to it, not the whole history.
func TestVisualizationShowsTheShortestFailingPrefix(t *testing.T) {
	lines := []string{
		`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
		`{"client":1,"key":"a","op":"get","out":null,"start":2,"end":3}`, // stale: the violation
	}
	for i := 0; i < 500; i++ {
		lines = append(lines, fmt.Sprintf(`{"client":0,"key":"a","op":"incr","by":1,"out":%d,"start":%d,"end":%d}`, i+2, 10+2*i, 11+2*i))
	}
	ops := history(t, lines...)
	key, n, err := Visualize(ops, Linearizable, []string{"a"}, filepath.Join(t.TempDir(), "v.html"))
	if err != nil || key != "a" || n != 2 {
		t.Fatalf("visualized key %q, %d operations (%v); want a, 2", key, n, err)
	}
}

func TestViolations(t *testing.T) {
	for name, lines := range map[string][]string{
		// The bug of a paused replica: a read that starts after an INCR returned misses it.
		"stale read": {
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"incr","by":1,"out":2,"start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		},
		"lost increment": {
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":1,"start":2,"end":3}`,
		},
		"two setnx win": {
			`{"client":0,"key":"a","op":"setnx","in":"x","out":true,"start":0,"end":10}`,
			`{"client":1,"key":"a","op":"setnx","in":"y","out":true,"start":0,"end":10}`,
		},
		"incr of a string": {
			`{"client":0,"key":"a","op":"set","in":"abc","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":2,"end":3}`,
		},
		"read of a value deleted before (a del without a count)": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		},
		"two cas from one value both swap": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"cas","expect":"1","in":"2","out":true,"start":2,"end":10}`,
			`{"client":2,"key":"a","op":"cas","expect":"1","in":"3","out":true,"start":3,"end":9}`,
		},
		"cas that fails on the value it expects": {
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"cas","expect":"1","in":"2","out":false,"start":2,"end":3}`,
		},
		"read of a value never written": {
			`{"client":0,"key":"a","op":"get","out":"ghost","start":0,"end":1}`,
		},
	} {
		ops := history(t, lines...)
		r := Check(ops, Linearizable, time.Minute)
		if r.OK || len(r.Illegal) != 1 || r.Illegal[0] != "a" {
			t.Errorf("%s: %+v, want key a illegal", name, r)
		}
		html := filepath.Join(t.TempDir(), "v.html")
		if _, _, err := Visualize(ops, Linearizable, r.Illegal, html); err != nil {
			t.Fatalf("%s: visualize: %v", name, err)
		}
		if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "a incr") && !strings.Contains(string(b), "a get") && !strings.Contains(string(b), "a setnx") && !strings.Contains(string(b), "a cas") {
			t.Errorf("%s: visualization lacks the operations (%v, %d bytes)", name, err, len(b))
		}
	}
}

// Malformed histories are refused with the line and the reason; nothing is checked.
func TestBadHistories(t *testing.T) {
	for want, text := range map[string]string{
		"want the header":                 `{"x":1}`,
		"empty history":                   ``,
		"is not one of":                   HistoryHeader + "\n" + `{"client":0,"key":"a","op":"swap","start":0,"end":1}`,
		"field expect must be given":      HistoryHeader + "\n" + `{"client":0,"key":"a","op":"cas","in":"x","out":true,"start":0,"end":1}`,
		"field expect must be absent":     HistoryHeader + "\n" + `{"client":0,"key":"a","op":"set","in":"x","expect":"y","start":0,"end":1}`,
		"cas: out":                        HistoryHeader + "\n" + `{"client":0,"key":"a","op":"cas","in":"x","expect":"y","out":1,"start":0,"end":1}`,
		"unknown field":                   HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","out":null,"start":0,"end":1,"x":2}`,
		"want 0 <= start <= end":          HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","out":null,"start":5,"end":1}`,
		"field in must be given":          HistoryHeader + "\n" + `{"client":0,"key":"a","op":"set","start":0,"end":1}`,
		"field by must be given":          HistoryHeader + "\n" + `{"client":0,"key":"a","op":"incr","out":1,"start":0,"end":1}`,
		"has no out":                      HistoryHeader + "\n" + `{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0}`,
		"leave it out":                    HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","start":0}`,
		"del removes 0 or 1":              HistoryHeader + "\n" + `{"client":0,"key":"a","op":"del","out":2,"start":0,"end":1}`,
		"get: out":                        HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","start":0,"end":1}`,
		"line 3":                          HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","out":null,"start":0,"end":1}` + "\n{",
		"client -1 out of range":          HistoryHeader + "\n" + `{"client":-1,"key":"a","op":"get","out":null,"start":0,"end":1}`,
		"set returns nothing to record":   HistoryHeader + "\n" + `{"client":0,"key":"a","op":"set","in":"x","out":"OK","start":0,"end":1}`,
		"setnx: out \"\\\"yes\\\"\"":      HistoryHeader + "\n" + `{"client":0,"key":"a","op":"setnx","in":"x","out":"yes","start":0,"end":1}`,
		"incr: out \"\\\"one\\\"\"":       HistoryHeader + "\n" + `{"client":0,"key":"a","op":"incr","by":1,"out":"one","start":0,"end":1}`,
		"field by must be absent":         HistoryHeader + "\n" + `{"client":0,"key":"a","op":"get","by":1,"out":null,"start":0,"end":1}`,
		"field in must be absent":         HistoryHeader + "\n" + `{"client":0,"key":"a","op":"del","in":"x","out":0,"start":0,"end":1}`,
		"cannot unmarshal string into Go": HistoryHeader + "\n" + `{"client":"c","key":"a","op":"get","out":null,"start":0,"end":1}`,
	} {
		_, err := ReadHistory(strings.NewReader(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("history %.60q: error %v, want one containing %q", text, err, want)
		}
	}
}

// The sequential-reads model (--reads sequential): writes linearizable, a read may return an older state of the key
// than the latest, but none older than what its client has already written or read, and none from a write that had
// not begun when it returned. Each case gives its verdict under both models.
func TestSequentialReads(t *testing.T) {
	for _, tc := range []struct {
		name         string
		seqOK, linOK bool
		lines        []string
	}{
		// (1) A stale read by another client, after a later write completed.
		{"stale read by another client", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"incr","by":1,"out":2,"start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"stale read of the initial absent state", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"get","out":null,"start":2,"end":3}`,
		}},
		{"stale read of a value deleted since (del without a count)", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		// (2) A client reads an older value than its own completed write.
		{"read older than the client's own write", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"read older than the client's own incr", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":2,"end":3}`,
		}},
		{"read of the client's own write while another client wrote since", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":2,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		{"read older than what a failed setnx saw", false, false, []string{
			`{"client":1,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"setnx","in":"y","out":false,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":4,"end":5}`,
		}},
		{"read older than what a failed cas saw", false, false, []string{
			`{"client":1,"key":"a","op":"set","in":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"cas","expect":"z","in":"y","out":false,"start":2,"end":3}`,
			`{"client":0,"key":"a","op":"get","out":null,"start":4,"end":5}`,
		}},
		{"read older than the client's own del without a count", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"del","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
		}},
		// (3) One client's reads go backwards.
		{"reads going backwards", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
		}},
		{"stale reads going forwards", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":6,"end":7}`,
		}},
		// A value written twice: a read takes its earliest place in the write order, so a later read may still
		// return what was written in between (but not after it read the second copy).
		{"a value written twice", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"set","in":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":8,"end":9}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":10,"end":11}`,
		}},
		{"a value written twice, then read going backwards", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":0,"key":"a","op":"set","in":"1","start":4,"end":5}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":6,"end":7}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":8,"end":9}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":10,"end":11}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":12,"end":13}`,
		}},
		// (4) A read returns a value whose write began after the read returned.
		{"read from the future", false, false, []string{
			`{"client":1,"key":"a","op":"get","out":"x","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"x","start":2,"end":3}`,
		}},
		{"read concurrent with the write", true, true, []string{
			`{"client":1,"key":"a","op":"get","out":"x","start":0,"end":2}`,
			`{"client":0,"key":"a","op":"set","in":"x","start":1,"end":3}`,
		}},
		// (5) Read-modify-writes are linearizable: a lost update between two INCRs.
		{"lost update", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":1}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":1,"start":2,"end":3}`,
		}},
		{"lost update between concurrent incrs", false, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"out":1,"start":0,"end":10}`,
			`{"client":1,"key":"a","op":"incr","by":1,"out":1,"start":1,"end":9}`,
		}},
		{"getset reading a stale value", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"getset","in":"3","out":"1","start":4,"end":5}`,
		}},
		{"two setnx win", false, false, []string{
			`{"client":0,"key":"a","op":"setnx","in":"x","out":true,"start":0,"end":10}`,
			`{"client":1,"key":"a","op":"setnx","in":"y","out":true,"start":0,"end":10}`,
		}},
		{"read of a value never written", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":1,"key":"a","op":"get","out":"ghost","start":2,"end":3}`,
		}},
		// (6) A write of unknown outcome moves no floor: the client that sent it may still read the older value,
		// even after another client saw the write applied.
		{"unknown-outcome write moves no floor", true, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":5,"end":6}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":7,"end":8}`,
		}},
		{"the same write known moves the floor", false, false, []string{
			`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
			`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
			`{"client":1,"key":"a","op":"get","out":"2","start":5,"end":6}`,
			`{"client":0,"key":"a","op":"get","out":"1","start":7,"end":8}`,
		}},
		{"unknown-outcome incr seen applied by one client, not by another", true, false, []string{
			`{"client":0,"key":"a","op":"incr","by":1,"start":0}`,
			`{"client":1,"key":"a","op":"get","out":"1","start":5,"end":6}`,
			`{"client":2,"key":"a","op":"get","out":null,"start":7,"end":8}`,
		}},
	} {
		ops := history(t, tc.lines...)
		for _, m := range []struct {
			model Consistency
			ok    bool
		}{{SequentialReads, tc.seqOK}, {Linearizable, tc.linOK}} {
			r := Check(ops, m.model, time.Minute)
			if r.Model != m.model.Name || r.OK != m.ok || len(r.Illegal) != map[bool]int{true: 0, false: 1}[m.ok] {
				t.Errorf("%s under %s: %+v, want ok=%t", tc.name, m.model.Name, r, m.ok)
				continue
			}
			if m.ok {
				continue
			}
			html := filepath.Join(t.TempDir(), "v.html")
			if key, _, err := Visualize(ops, m.model, r.Illegal, html); err != nil || key != "a" {
				t.Fatalf("%s under %s: visualize: key %q, %v", tc.name, m.model.Name, key, err)
			}
			b, err := os.ReadFile(html)
			if err != nil || !strings.Contains(string(b), "a get") && !strings.Contains(string(b), "a incr") &&
				!strings.Contains(string(b), "a setnx") {
				t.Errorf("%s under %s: visualization lacks the operations (%v, %d bytes)", tc.name, m.model.Name, err, len(b))
			}
		}
	}
}

// The visualization of the sequential-reads model describes its states: the latest value, its place in the write
// order, and the clients' floors.
func TestSequentialReadsVisualization(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
		`{"client":0,"key":"a","op":"get","out":"1","start":4,"end":5}`,
	)
	html := filepath.Join(t.TempDir(), "v.html")
	if _, n, err := Visualize(ops, SequentialReads, []string{"a"}, html); err != nil || n != 3 {
		t.Fatalf("visualize: %d operations, %v; want 3", n, err)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`state 2 of the write order`, `c0\u003e=2`} {
		if !strings.Contains(string(b), want) && !strings.Contains(string(b), strings.ReplaceAll(want, `\u003e`, ">")) {
			t.Errorf("visualization lacks %q", want)
		}
	}
	m := SequentialReads.Model(operations(ops))
	got, want := m.DescribeState(steps(t, m, ops[:2]...)), `"2" (state 2 of the write order); reads from c0>=2`
	if got != want {
		t.Errorf("state %q, want %q", got, want)
	}
}

func operations(ops []Op) []porcupine.Operation {
	var h []porcupine.Operation
	for i := range ops {
		h = append(h, operation(&ops[i]))
	}
	return h
}

// steps applies the operations to the model's initial state, in order.
func steps(t *testing.T, m porcupine.Model, ops ...Op) any {
	t.Helper()
	s := m.Init()
	for _, op := range ops {
		o := operation(&op)
		ok, next := m.Step(s, o.Input, o.Output)
		if !ok {
			t.Fatalf("%s is illegal in state %s", m.DescribeOperation(o.Input, o.Output), m.DescribeState(s))
		}
		s = next
	}
	return s
}

// Steps never change the state they start from (Porcupine backtracks to it); Equal compares the write order from the
// lowest floor of a client still to read, and Hash agrees with it.
func TestSequentialStates(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":1,"key":"a","op":"get","out":"1","start":2,"end":3}`,
		`{"client":2,"key":"a","op":"incr","by":1,"out":2,"start":4,"end":5}`,
		`{"client":1,"key":"a","op":"get","out":"2","start":6,"end":7}`,
	)
	m := SequentialReads.Model(operations(ops))
	s0 := m.Init()
	s1 := steps(t, m, ops[0])
	before := m.DescribeState(s1)
	s2 := steps(t, m, ops[:2]...)
	if _, again := m.Step(s1, operation(&ops[1]).Input, operation(&ops[1]).Output); !m.Equal(again, s2) {
		t.Errorf("the same step twice: %s, %s", m.DescribeState(again), m.DescribeState(s2))
	}
	s3 := steps(t, m, ops[:3]...)
	if m.DescribeState(s1) != before || m.Equal(s1, s2) || m.Equal(s2, s3) || m.Equal(s0, s1) {
		t.Errorf("a step changed its state: %s, then %s", before, m.DescribeState(s1))
	}
	if m.DescribeState(s0) != "absent (state 0 of the write order); reads from c1>=0" ||
		m.DescribeState(s2) != `"1" (state 1 of the write order); reads from c1>=1` ||
		m.DescribeState(steps(t, m, ops...)) != `"2" (state 2 of the write order)` { // client 1 read all it reads
		t.Errorf("states %s, %s", m.DescribeState(s0), m.DescribeState(s2))
	}
	// The same steps again (no shared nodes) give an equal state, with the same hash.
	if t3 := steps(t, m, ops[:3]...); !m.Equal(s3, t3) || m.Hash(s3) != m.Hash(t3) {
		t.Errorf("equal states differ: %s (%x), %s (%x)", m.DescribeState(s3), m.Hash(s3), m.DescribeState(t3), m.Hash(t3))
	}
	// Write orders that differ where client 1 may still read are different states; once its floor is above the
	// difference, they are equal.
	sets := func(values ...string) []Op {
		var o []Op
		for _, v := range values {
			o = append(o, Op{Client: 0, Key: "a", Kind: "set", In: &v}) // unknown outcome: no floor moves
		}
		return o
	}
	read3 := history(t, `{"client":1,"key":"a","op":"get","out":"3","start":6,"end":7}`)
	a, b := steps(t, m, sets("1", "3")...), steps(t, m, sets("2", "3")...)
	if m.Equal(a, b) || !m.Equal(a, steps(t, m, sets("1", "3")...)) {
		t.Errorf("write orders 1 3 and 2 3: equal %t", m.Equal(a, b))
	}
	a, b = steps(t, m, append(sets("1", "3"), read3...)...), steps(t, m, append(sets("2", "3"), read3...)...)
	if !m.Equal(a, b) || m.Hash(a) != m.Hash(b) {
		t.Errorf("write orders 1 3 and 2 3 after client 1 read 3: %s, %s: equal %t",
			m.DescribeState(a), m.DescribeState(b), m.Equal(a, b))
	}
	// ... but not when they differ at its floor: client 1 wrote 3 or 4 there, and may still read it.
	wrote := func(v string) []Op {
		return history(t, `{"client":1,"key":"a","op":"set","in":"`+v+`","start":8,"end":9}`)
	}
	a = steps(t, m, slices.Concat(sets("1"), wrote("3"), sets("5"))...)
	b = steps(t, m, slices.Concat(sets("1"), wrote("4"), sets("5"))...)
	if m.Equal(a, b) {
		t.Errorf("write orders 1 3 5 and 1 4 5 with client 1 at 2: equal: %s, %s", m.DescribeState(a), m.DescribeState(b))
	}
}

// --reads selects the model through the command line; the report names it.
func TestReadsFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	stale := HistoryHeader + "\n" + strings.Join([]string{
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":0,"key":"a","op":"set","in":"2","start":2,"end":3}`,
		`{"client":1,"key":"a","op":"get","out":"1","start":4,"end":5}`,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "v.html")
	for _, tc := range []struct {
		args  []string
		code  int
		model string
	}{
		{[]string{path}, 1, "linearizability"},
		{[]string{"--reads", "linearizable", "--html", html, path}, 1, "linearizability"},
		{[]string{"--reads", "sequential", path}, 0, "sequential reads"},
		{[]string{"--reads=sequential", "--timeout", "10s", path}, 0, "sequential reads"},
		{[]string{"--reads", "causal", path}, 2, ""},
		{[]string{"--reads", "sequential"}, 2, ""},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr.String())
			continue
		}
		if tc.code == 2 {
			if stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage:") {
				t.Errorf("%v: stdout %q, stderr %q; want only usage", tc.args, stdout.String(), stderr.String())
			}
			continue
		}
		var r Report
		if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil || r.Model != tc.model || r.Operations != 3 {
			t.Errorf("%v: report %q (%v); want model %q", tc.args, stdout.String(), err, tc.model)
		}
		if code == 1 && (r.Visualization == nil) != !slices.Contains(tc.args, "--html") {
			t.Errorf("%v: visualization %+v", tc.args, r.Visualization)
		}
	}
}

// Random small histories, checked by Porcupine and by brute force (every order of the operations that respects
// real time, each operation applied by a plain slice-based statement of the sequential-reads rule, or by the
// linearizable step): the verdicts agree under both models, and sequential reads never refuse what linearizability
// accepts.
func TestSequentialReadsAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []string{"1", "2"}
	counts := map[[2]bool]int{}
	for iter := 0; iter < 3000; iter++ {
		n := 2 + rng.IntN(5)
		var lines []string
		for i := 0; i < n; i++ {
			start := rng.IntN(20)
			end := fmt.Sprintf(`,"end":%d`, start+rng.IntN(6))
			v := values[rng.IntN(2)]
			var body string
			switch k := rng.IntN(10); {
			case k < 4:
				out := "null"
				if rng.IntN(3) > 0 {
					out = `"` + values[rng.IntN(2)] + `"`
				}
				body = `"op":"get","out":` + out
			case k < 6:
				body = `"op":"set","in":"` + v + `"`
			case k < 7:
				body = fmt.Sprintf(`"op":"incr","by":1,"out":%d`, 1+rng.IntN(3))
			case k < 8:
				body = `"op":"del","out":` + fmt.Sprint(rng.IntN(2))
			case k < 9:
				body = `"op":"cas","expect":"` + values[rng.IntN(2)] + `","in":"` + v + `","out":` + fmt.Sprint(rng.IntN(2) == 0)
			default:
				body = `"op":"getset","in":"` + v + `","out":"` + values[rng.IntN(2)] + `"`
			}
			if !strings.Contains(body, `"get"`) && rng.IntN(5) == 0 { // unknown outcome
				if i := strings.Index(body, `,"out":`); i >= 0 {
					body = body[:i]
				}
				end = ""
			}
			lines = append(lines, fmt.Sprintf(`{"client":%d,"key":"a",%s,"start":%d%s}`, rng.IntN(3), body, start, end))
		}
		ops := history(t, lines...)
		seq, lin := Check(ops, SequentialReads, time.Minute).OK, Check(ops, Linearizable, time.Minute).OK
		if want := bruteForce(ops, refSeqStep, refSeqState{writes: []register{{}}, floors: map[int]int{}}); seq != want {
			t.Fatalf("sequential reads: porcupine %t, brute force %t:\n%s", seq, want, strings.Join(lines, "\n"))
		}
		linStep := func(s any, c call, out Output) (bool, any) { return step(s, c, out) }
		if want := bruteForce(ops, linStep, register{}); lin != want {
			t.Fatalf("linearizability: porcupine %t, brute force %t:\n%s", lin, want, strings.Join(lines, "\n"))
		}
		if lin && !seq {
			t.Fatalf("linearizable but not sequential:\n%s", strings.Join(lines, "\n"))
		}
		counts[[2]bool{seq, lin}]++
	}
	if counts[[2]bool{true, false}] == 0 || counts[[2]bool{true, true}] == 0 || counts[[2]bool{false, false}] == 0 {
		t.Errorf("the random histories do not cover the verdicts: %v", counts)
	}
	t.Logf("verdicts [sequential linearizable]: %v", counts)
}

// refSeqState is the sequential-reads rule as the README states it, on a plain slice, copied at every step.
type refSeqState struct {
	writes []register
	floors map[int]int
}

func refSeqStep(state any, c call, out Output) (bool, any) {
	s := state.(refSeqState)
	next := refSeqState{writes: append([]register(nil), s.writes...), floors: map[int]int{}}
	for k, v := range s.floors {
		next.floors[k] = v
	}
	if c.In.Kind == "get" {
		if !out.Known {
			return true, next
		}
		for i := s.floors[c.Client]; i < len(s.writes); i++ {
			if sameValue(s.writes[i], out.Value) {
				next.floors[c.Client] = i
				return true, next
			}
		}
		return false, nil
	}
	ok, r := step(s.writes[len(s.writes)-1], c, out)
	if !ok {
		return false, nil
	}
	if r != s.writes[len(s.writes)-1] {
		next.writes = append(next.writes, r.(register))
	}
	if c.Done {
		next.floors[c.Client] = len(next.writes) - 1
	}
	return true, next
}

// bruteForce tries every order of ops that respects real time (an operation that returned before another began
// comes first; one of unknown outcome never returned).
func bruteForce(ops []Op, stepf func(any, call, Output) (bool, any), init any) bool {
	used := make([]bool, len(ops))
	var try func(state any, left int) bool
	try = func(state any, left int) bool {
		if left == 0 {
			return true
		}
		for i := range ops {
			if used[i] {
				continue
			}
			blocked := false // some unused operation returned before this one began
			for j := range ops {
				if !used[j] && j != i && ops[j].ReturnTime() < ops[i].Start {
					blocked = true
					break
				}
			}
			if blocked {
				continue
			}
			op := operation(&ops[i])
			if ok, next := stepf(state, op.Input.(call), op.Output.(Output)); ok {
				used[i] = true
				if try(next, left-1) {
					return true
				}
				used[i] = false
			}
		}
		return false
	}
	return try(init, len(ops))
}

// With sequential reads, a key whose history is linearizable is accepted by that check first (the common case, and
// fast where the sequential-reads search is slow: a client stalled across thousands of writes); a key with a stale
// read is then searched with the sequential-reads model.
func TestSequentialReadsTriesLinearizabilityFirst(t *testing.T) {
	ops := history(t,
		`{"client":0,"key":"a","op":"set","in":"1","start":0,"end":1}`,
		`{"client":1,"key":"a","op":"get","out":"1","start":2,"end":3}`,
		`{"client":0,"key":"b","op":"set","in":"1","start":0,"end":1}`,
		`{"client":0,"key":"b","op":"set","in":"2","start":2,"end":3}`,
		`{"client":1,"key":"b","op":"get","out":"1","start":4,"end":5}`, // stale
	)
	r := Check(ops, SequentialReads, 10*time.Second)
	if !r.OK || r.Keys != 2 || r.AcceptedByStronger == nil || *r.AcceptedByStronger != 1 {
		t.Fatalf("report %+v: want ok, key a accepted as linearizable and b by the sequential-reads search", r)
	}
	if r := Check(ops, Linearizable, 10*time.Second); r.OK || r.AcceptedByStronger != nil {
		t.Fatalf("report %+v: want key b illegal, and no count of keys a stronger model accepted", r)
	}
}
