// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential-reads model (--reads sequential) is for a protocol whose writes a leader orders (ZAB) and whose
// reads are served from the local copy of the node the client is connected to. Per key, its state is the key's
// write order so far (a list of register states, starting with absent) and a floor per client:
//
//   - A write or read-modify-write (set, getset, setnx, cas, del, incr) is the linearizable step on the latest
//     state (its result is checked the same way); a new register state is appended to the list. When the call
//     returned, its client's floor becomes the index of the latest state: it has seen at least that much (a setnx
//     or cas that did not swap too). A call without an end (unknown outcome) moves no floor.
//   - A get by client c that returned is legal iff some state at an index >= floor[c] equals what it read; floor[c]
//     becomes the smallest such index (the greedy choice: a lower floor only allows more later).
//
// Porcupine still places every operation at one point within its interval, so a read never returns a value whose
// write had not begun before the read returned, nor one older than its client's own last write or read of the key;
// any older value is allowed otherwise (sequential consistency per key, within real time).
//
// Only reads look at floors, and only a floor's suffix of the write order: the state keeps a floor for the clients
// with a get still to come in the history checked, and two states are equal when they agree from the lowest of
// those floors on. Without that, two orders of the same concurrent writes would stay different states forever and
// Porcupine's search of a history that is not legal would grow exponentially with its length.

// seqState is a state of the sequential-reads model. It is immutable: a step returns a new one, sharing what did
// not change (the write order is a persistent list: appending adds one node; readers is copied when it changes).
type seqState struct {
	latest  *version
	readers map[int]reader // clients with a get still to come
}

// reader is a client's floor (the lowest index of the write order its next get may return) and the number of its
// gets with a known outcome not yet linearized.
type reader struct{ floor, gets int }

// version is one state in a key's write order; the list runs from the latest back to the initial absent state.
type version struct {
	reg   register
	index int      // 0: the initial absent state
	prev  *version // nil at index 0
}

// seqModel is the model for one key's history: it counts each client's gets of known outcome.
func seqModel(history []porcupine.Operation) porcupine.Model {
	gets := map[int]int{}
	for _, op := range history {
		if c := op.Input.(call); c.In.Kind == "get" && op.Output.(Output).Known {
			gets[c.Client]++
		}
	}
	return porcupine.Model{
		Init: func() any {
			readers := make(map[int]reader, len(gets))
			for c, n := range gets {
				readers[c] = reader{0, n}
			}
			return seqState{latest: &version{}, readers: readers}
		},
		Step:                      seqStep,
		Equal:                     seqEqual,
		Hash:                      seqHash,
		DescribeOperation:         describeOperation,
		DescribeState:             seqDescribe,
		DescribeOperationMetadata: describeMetadata,
	}
}

func seqStep(state, input, output any) (bool, any) {
	s, c, out := state.(seqState), input.(call), output.(Output)
	if c.In.Kind == "get" {
		if !out.Known {
			return true, s
		}
		r := s.readers[c.Client] // every get of known outcome is counted: r.gets > 0
		found := -1
		for v := s.latest; v != nil && v.index >= r.floor; v = v.prev {
			if sameValue(v.reg, out.Value) {
				found = v.index // keep walking back: the smallest index wins
			}
		}
		if found < 0 {
			return false, s
		}
		return true, s.withReader(c.Client, reader{found, r.gets - 1})
	}
	ok, next := step(s.latest.reg, input, output)
	if !ok {
		return false, s
	}
	if r := next.(register); r != s.latest.reg {
		s.latest = &version{reg: r, index: s.latest.index + 1, prev: s.latest}
	}
	if r, reads := s.readers[c.Client]; reads && c.Done {
		s = s.withReader(c.Client, reader{s.latest.index, r.gets})
	}
	return true, s
}

// withReader is s with the client's reader state r (dropped once it has no get to come); a copy when it changes.
func (s seqState) withReader(client int, r reader) seqState {
	if old, ok := s.readers[client]; ok && old == r {
		return s
	}
	readers := make(map[int]reader, len(s.readers))
	for k, v := range s.readers {
		readers[k] = v
	}
	if r.gets > 0 {
		readers[client] = r
	} else {
		delete(readers, client)
	}
	s.readers = readers
	return s
}

// lowest is the lowest index a get may still return.
func (s seqState) lowest() int {
	low := s.latest.index
	for _, r := range s.readers {
		low = min(low, r.floor)
	}
	return low
}

// seqEqual compares the readers and the write order from the lowest floor on (what is below it no get may return).
func seqEqual(a, b any) bool {
	x, y := a.(seqState), b.(seqState)
	if len(x.readers) != len(y.readers) {
		return false
	}
	for k, r := range x.readers {
		if q, ok := y.readers[k]; !ok || q != r {
			return false
		}
	}
	u, v := x.latest, y.latest
	if u.index != v.index {
		return false
	}
	for low := x.lowest(); u != v && u.index >= low; u, v = u.prev, v.prev { // a shared node: a shared rest
		if u.reg != v.reg {
			return false
		}
	}
	return true
}

// seqHash agrees with seqEqual: it covers the length of the write order, the latest state and the readers.
func seqHash(state any) uint64 {
	s := state.(seqState)
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %t %s", s.latest.index, s.latest.reg.present, s.latest.reg.value)
	sum := h.Sum64()
	for k, r := range s.readers { // order-independent
		sum += ((uint64(k)*0x9e3779b97f4a7c15 ^ uint64(r.floor)) + uint64(r.gets)<<40) * 0xbf58476d1ce4e5b9
	}
	return sum
}

// seqDescribe shows the latest state, its index in the write order and the floors of the clients still to read.
func seqDescribe(state any) string {
	s := state.(seqState)
	clients := make([]int, 0, len(s.readers))
	for k := range s.readers {
		clients = append(clients, k)
	}
	sort.Ints(clients)
	var b strings.Builder
	fmt.Fprintf(&b, "%s (state %d of the write order)", s.latest.reg, s.latest.index)
	if len(clients) > 0 {
		b.WriteString("; reads from")
		for i, k := range clients {
			if i == 8 {
				fmt.Fprintf(&b, " ... (%d clients)", len(clients))
				break
			}
			fmt.Fprintf(&b, " c%d>=%d", k, s.readers[k].floor)
		}
	}
	return b.String()
}
