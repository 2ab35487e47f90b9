// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// rdx-lincheck checks that a history of single-key operations (GET, SET, INCR/INCRBY/DECR, SETNX, GETSET, DEL) is
// linearizable, key by key, with Porcupine (github.com/anishathalye/porcupine). It prints one JSON report and, when
// a key is not linearizable, can write Porcupine's HTML visualization of the failing keys.
//
//	rdx-lincheck [--html failure.html] [--timeout 60s] history.jsonl
//
// Exit status: 0 linearizable, 1 not linearizable, 2 bad usage or a malformed history, 3 undecided within the
// timeout (a key whose history is too concurrent to search in time).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Report is what rdx-lincheck prints.
type Report struct {
	OK             bool           `json:"ok"`
	Operations     int            `json:"operations"`
	UnknownOutcome int            `json:"unknown_outcome"` // operations recorded without an end
	Keys           int            `json:"keys"`
	Illegal        []string       `json:"illegal"`   // keys whose history is not linearizable
	Undecided      []string       `json:"undecided"` // keys the search did not finish within the timeout
	Visualization  *Visualization `json:"visualization,omitempty"`
	Seconds        float64        `json:"seconds"`
}

// Visualization says what the HTML file shows: the shortest failing prefix of one key's history.
type Visualization struct {
	Path       string `json:"path"`
	Key        string `json:"key"`
	Operations int    `json:"operations"`
}

func main() {
	html := flag.String("html", "", "write Porcupine's visualization of the keys that are not linearizable to this file")
	timeout := flag.Duration("timeout", time.Minute, "search time per key before it is reported undecided")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: rdx-lincheck [--html failure.html] [--timeout 60s] history.jsonl")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *timeout <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdx-lincheck:", err)
		os.Exit(2)
	}
	ops, err := ReadHistory(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdx-lincheck: %s: %v\n", flag.Arg(0), err)
		os.Exit(2)
	}
	r := Check(ops, *timeout)
	if len(r.Illegal) > 0 && *html != "" {
		key, n, err := Visualize(ops, r.Illegal, *html)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rdx-lincheck: visualization:", err)
		} else {
			r.Visualization = &Visualization{Path: *html, Key: key, Operations: n}
		}
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	switch {
	case len(r.Illegal) > 0:
		os.Exit(1)
	case len(r.Undecided) > 0:
		os.Exit(3)
	}
}

// Check searches a linearization of each key's operations.
func Check(ops []Op, timeout time.Duration) Report {
	began := time.Now()
	byKey := map[string][]porcupine.Operation{}
	r := Report{Operations: len(ops), Illegal: []string{}, Undecided: []string{}}
	for i := range ops {
		if ops[i].End == nil {
			r.UnknownOutcome++
		}
		byKey[ops[i].Key] = append(byKey[ops[i].Key], operation(&ops[i]))
	}
	r.Keys = len(byKey)
	for key, history := range byKey {
		switch porcupine.CheckOperationsTimeout(kvModel, history, timeout) {
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
// linearizable part it found and the operations that could not follow it); it returns the key and the number of
// operations shown. A whole history of tens of thousands of operations makes a page no browser opens comfortably.
func Visualize(ops []Op, keys []string, path string) (string, int, error) {
	var best []porcupine.Operation
	bestKey := ""
	for _, key := range keys {
		var history []porcupine.Operation
		for i := range ops {
			if ops[i].Key == key {
				history = append(history, operation(&ops[i]))
			}
		}
		if p := shortestIllegalPrefix(history); best == nil || len(p) < len(best) {
			best, bestKey = p, key
		}
	}
	_, info := porcupine.CheckOperationsVerbose(kvModel, best, time.Minute)
	return bestKey, len(best), porcupine.VisualizePath(kvModel, info, path)
}

// shortestIllegalPrefix bisects on time for the earliest cut whose prefix is already not linearizable: the
// operations that began before the cut, those still running at the cut with an unknown outcome (so the prefix of
// a linearizable history is always linearizable).
func shortestIllegalPrefix(history []porcupine.Operation) []porcupine.Operation {
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
			if op.Return > cut {
				op.Return, op.Output = math.MaxInt64, Output{}
			}
			p = append(p, op)
		}
		return p
	}
	lo, hi := 0, len(times) // the prefix at times[hi-1] (the whole history) is illegal
	for lo < hi {
		mid := (lo + hi) / 2
		if porcupine.CheckOperationsTimeout(kvModel, prefix(times[mid]), 10*time.Second) == porcupine.Illegal {
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
	return porcupine.Operation{ClientId: op.Client, Input: call{Key: op.Key, In: op.Input()}, Call: op.Start,
		Output: out, Return: op.ReturnTime(), Metadata: meta}
}
