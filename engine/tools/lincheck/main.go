// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// rdx-lincheck checks that a history of single-key operations (GET, SET, INCR/INCRBY/DECR, SETNX, GETSET, DEL) is
// linearizable, key by key, with Porcupine (github.com/anishathalye/porcupine). It prints one JSON report and, when
// a key is not linearizable, can write Porcupine's HTML visualization of the failing keys. With --reads sequential
// it checks a weaker model instead: writes linearizable, reads possibly stale but in each client's session order
// (sequential.go).
//
//	rdx-lincheck [--reads linearizable|sequential] [--html failure.html] [--timeout 60s] history.jsonl
//
// Exit status: 0 every key is legal under the model (linearizable by default), 1 some key is not, 2 bad usage or a
// malformed history, 3 undecided within the timeout (a key whose history is too concurrent to search in time).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is what rdx-lincheck prints.
type Report struct {
	OK             bool     `json:"ok"`
	Model          string   `json:"model"` // what was checked: "linearizability" or "sequential reads"
	Operations     int      `json:"operations"`
	UnknownOutcome int      `json:"unknown_outcome"` // operations recorded without an end
	Keys           int      `json:"keys"`
	Illegal        []string `json:"illegal"`   // keys whose history violates the model
	Undecided      []string `json:"undecided"` // keys the search did not finish within the timeout
	// With a model a stronger one implies (sequential reads): the keys whose histories the stronger one accepted.
	AcceptedByStronger *int           `json:"linearizable_keys,omitempty"`
	Visualization      *Visualization `json:"visualization,omitempty"`
	Seconds            float64        `json:"seconds"`
}

// Visualization says what the HTML file shows: the shortest failing prefix of one key's history.
type Visualization struct {
	Path       string `json:"path"`
	Key        string `json:"key"`
	Operations int    `json:"operations"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it prints the report to stdout and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdx-lincheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	reads := fs.String("reads", "linearizable", "the model: linearizable (every operation), or sequential (writes "+
		"linearizable; a read may be stale, but not older than what its client already wrote or read of the key)")
	html := fs.String("html", "", "write Porcupine's visualization of a key that violates the model to this file")
	timeout := fs.Duration("timeout", time.Minute, "search time per key before it is reported undecided")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rdx-lincheck [--reads linearizable|sequential] [--html failure.html] "+
			"[--timeout 60s] history.jsonl")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	model, known := consistencies[*reads]
	if !known {
		fmt.Fprintf(stderr, "rdx-lincheck: --reads %q: want linearizable or sequential\n", *reads)
		fs.Usage()
		return 2
	}
	if fs.NArg() != 1 || *timeout <= 0 {
		fs.Usage()
		return 2
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "rdx-lincheck:", err)
		return 2
	}
	ops, err := ReadHistory(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "rdx-lincheck: %s: %v\n", fs.Arg(0), err)
		return 2
	}
	if model.Validate != nil {
		if err := model.Validate(ops); err != nil {
			fmt.Fprintf(stderr, "rdx-lincheck: %s: %v\n", fs.Arg(0), err)
			return 2
		}
	}
	r := Check(ops, model, *timeout)
	if len(r.Illegal) > 0 && *html != "" {
		key, n, err := Visualize(ops, model, r.Illegal, *html)
		if err != nil {
			fmt.Fprintln(stderr, "rdx-lincheck: visualization:", err)
		} else {
			r.Visualization = &Visualization{Path: *html, Key: key, Operations: n}
		}
	}
	out, _ := json.Marshal(r)
	fmt.Fprintln(stdout, string(out))
	switch {
	case len(r.Illegal) > 0:
		return 1
	case len(r.Undecided) > 0:
		return 3
	}
	return 0
}

// Check searches a linearization of each key's operations under the model; the history must pass the model's
// Validate.
func Check(ops []Op, model Consistency, timeout time.Duration) Report {
	began := time.Now()
	byKey := map[string][]porcupine.Operation{}
	r := Report{Model: model.Name, Operations: len(ops), Illegal: []string{}, Undecided: []string{}}
	for i := range ops {
		if ops[i].End == nil {
			r.UnknownOutcome++
		}
		byKey[ops[i].Key] = append(byKey[ops[i].Key], operation(&ops[i]))
	}
	r.Keys = len(byKey)
	if model.ImpliedBy != nil {
		r.AcceptedByStronger = new(int)
	}
	for key, history := range byKey {
		if model.ImpliedBy != nil {
			// A share of the budget: a stronger model's search fails fast on most histories it rejects.
			stronger := model.ImpliedBy.Model(history)
			if porcupine.CheckOperationsTimeout(stronger, history, min(timeout/4, 10*time.Second)) == porcupine.Ok {
				*r.AcceptedByStronger++
				continue
			}
		}
		switch porcupine.CheckOperationsTimeout(model.Model(history), history, timeout) {
		case porcupine.Illegal:
			r.Illegal = append(r.Illegal, key)
		case porcupine.Unknown:
			r.Undecided = append(r.Undecided, key)
		}
	}
	sort.Strings(r.Illegal)
	sort.Strings(r.Undecided)
	r.OK = len(r.Illegal) == 0 && len(r.Undecided) == 0
	r.Seconds = time.Since(began).Seconds()
	return r
}

// Visualize writes Porcupine's HTML view of the shortest failing prefix among the given keys' histories (the
// legal part it found and the operations that could not follow it); it returns the key and the number of
// operations shown. A whole history of tens of thousands of operations makes a page no browser opens comfortably.
func Visualize(ops []Op, model Consistency, keys []string, path string) (string, int, error) {
	var best []porcupine.Operation
	bestKey := ""
	for _, key := range keys {
		var history []porcupine.Operation
		for i := range ops {
			if ops[i].Key == key {
				history = append(history, operation(&ops[i]))
			}
		}
		if p := shortestIllegalPrefix(model, history); best == nil || len(p) < len(best) {
			best, bestKey = p, key
		}
	}
	m := model.Model(best)
	_, info := porcupine.CheckOperationsVerbose(m, best, time.Minute)
	return bestKey, len(best), porcupine.VisualizePath(m, info, path)
}

// shortestIllegalPrefix bisects on time for the earliest cut whose prefix already violates the model: the
// operations that began before the cut, those still running at the cut with an unknown outcome (so the prefix of
// a legal history is always legal, under either model).
func shortestIllegalPrefix(model Consistency, history []porcupine.Operation) []porcupine.Operation {
	times := make([]int64, 0, len(history))
	for _, op := range history {
		if op.Return != math.MaxInt64 {
			times = append(times, op.Return)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	prefix := func(cut int64) []porcupine.Operation {
		var p []porcupine.Operation
		for _, op := range history {
			if op.Call > cut {
				continue
			}
			if op.Return > cut { // still running: of unknown outcome
				c := op.Input.(call)
				c.Done = false
				op.Input, op.Return, op.Output = c, math.MaxInt64, Output{}
			}
			p = append(p, op)
		}
		return p
	}
	lo, hi := 0, len(times) // the prefix at times[hi-1] (the whole history) is illegal
	for lo < hi {
		mid := (lo + hi) / 2
		p := prefix(times[mid])
		if porcupine.CheckOperationsTimeout(model.Model(p), p, 10*time.Second) == porcupine.Illegal {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo >= len(times) {
		return history
	}
	return prefix(times[lo])
}

func operation(op *Op) porcupine.Operation {
	out, _ := op.Output() // validated when read
	var meta any
	if op.Node != "" {
		meta = "at " + op.Node
	}
	in := call{Key: op.Key, In: op.Input(), Client: op.Client, Start: op.Start, Done: op.End != nil}
	return porcupine.Operation{ClientId: op.Client, Input: in, Call: op.Start,
		Output: out, Return: op.ReturnTime(), Metadata: meta}
}
