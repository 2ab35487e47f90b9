// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
