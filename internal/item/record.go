package item

import "math/bits"

// Record is an item as validation reads it: its keys and its contract
// attributes as Contract returns them, without a map for the attributes
// when the item has none outside the contract (what every producer
// writes). A store that decodes its own encoding can fill one without
// building the item's map.
type Record struct {
	PK, SK string
	// Vals and Present are Contract's results: Vals[i] is the attribute
	// ContractAttrs[i] when Present has bit 1<<i.
	Vals    [NumContractAttrs]Value
	Present uint16
	// Others are the item's attributes outside the contract, nil when it
	// has none.
	Others map[string]Value
}

// RecordOf returns the Record of it (Others holds the same values as
// it.Attrs, in a map of its own).
func RecordOf(it *Item) Record {
	r := Record{PK: it.PK, SK: it.SK}
	r.Vals, r.Present = it.Contract()
	if n := bits.OnesCount16(r.Present); n != len(it.Attrs) {
		r.Others = make(map[string]Value, len(it.Attrs)-n)
		for name, v := range it.Attrs {
			if contractIndex(name) < 0 {
				r.Others[name] = v
			}
		}
	}
	return r
}

// Item returns the item r was read from: its keys and every attribute,
// in a new map.
func (r *Record) Item() Item {
	attrs := make(map[string]Value, bits.OnesCount16(r.Present)+len(r.Others))
	for i, name := range ContractAttrs {
		if r.Present&(1<<i) != 0 {
			attrs[name] = r.Vals[i]
		}
	}
	for name, v := range r.Others {
		attrs[name] = v
	}
	return Item{PK: r.PK, SK: r.SK, Attrs: attrs}
}

// Parse is Parse of r's item.
func (r *Record) Parse() (Transaction, error) {
	return ParseContract(r.PK, r.SK, &r.Vals, r.Present)
}
