package window

import "encoding/binary"

// sessionKeys maps a session key (16 bytes) to its open sessions: an
// open-addressed table probed linearly, of a power-of-two size at most
// half full, whose removals shift the entries after them back (no
// tombstones: keys come and go as their sessions close). The result stage
// of sessions looks a key up per tuple, in its stream's order: a Go map
// hashes the key with a call and probes through its directory.
type sessionKeys struct {
	slots []keySlot
	n     int
}

type keySlot struct {
	k0, k1 uint64
	l      *sessionList // nil: empty
}

func keyWords(k [16]byte) (uint64, uint64) {
	return binary.LittleEndian.Uint64(k[0:8]), binary.LittleEndian.Uint64(k[8:16])
}

// home is where key (k0, k1) starts its probe.
func (t *sessionKeys) home(k0, k1 uint64) int {
	return int(hashKey(k0, k1) & uint64(len(t.slots)-1))
}

// get returns key k's sessions, nil where it has none.
func (t *sessionKeys) get(k [16]byte) *sessionList {
	if t.n == 0 {
		return nil
	}
	k0, k1 := keyWords(k)
	mask := len(t.slots) - 1
	for i := t.home(k0, k1); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.l == nil {
			return nil
		}
		if s.k0 == k0 && s.k1 == k1 {
			return s.l
		}
	}
}

// put files l as key k's sessions; k must not be in the table.
func (t *sessionKeys) put(k [16]byte, l *sessionList) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	k0, k1 := keyWords(k)
	t.insert(k0, k1, l)
	t.n++
}

func (t *sessionKeys) insert(k0, k1 uint64, l *sessionList) {
	mask := len(t.slots) - 1
	i := t.home(k0, k1)
	for t.slots[i].l != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = keySlot{k0: k0, k1: k1, l: l}
}

// remove forgets key k, which must be in the table: the entries after
// its slot whose probe passed it move back into the hole.
func (t *sessionKeys) remove(k [16]byte) {
	k0, k1 := keyWords(k)
	mask := len(t.slots) - 1
	i := t.home(k0, k1)
	for t.slots[i].k0 != k0 || t.slots[i].k1 != k1 || t.slots[i].l == nil {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; t.slots[j].l != nil; j = (j + 1) & mask {
		// The entry at j may fill hole i unless its home lies
		// cyclically in (i, j]: then it would sit before its home.
		h := t.home(t.slots[j].k0, t.slots[j].k1)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = keySlot{}
	t.n--
}

func (t *sessionKeys) grow() {
	old := t.slots
	t.slots = make([]keySlot, max(64, 2*len(old)))
	for _, s := range old {
		if s.l != nil {
			t.insert(s.k0, s.k1, s.l)
		}
	}
}
