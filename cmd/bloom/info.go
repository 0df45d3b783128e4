package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/bloomkit/bloomkit/bloom"
	"github.com/bloomkit/bloomkit/cuckoo"
	"github.com/bloomkit/bloomkit/frozen"
	"github.com/bloomkit/bloomkit/internal/format"
)

func init() {
	register(command{name: "info", summary: "describe a filter file: type, size, items, fill, rate, checksum", run: runInfo})
}

var infoHelp = help{
	name:     "info",
	synopsis: `info [--json] FILE...`,
	about: `Describes each filter FILE: its type, parameters (bits m, probes k, seed, and
the keys and rate it was planned for), the number of items (estimated from
the bits set, for Bloom filters), the fill ratio, the false-positive rate it
has now, its size, and whether its checksums hold.

The whole file is read and checked. A damaged or truncated file is
reported with what its header says and exit status 2; its contents are not
used.`,
	examples: `bloom info urls.bf
bloom info --json urls.bf | jq .estimated_fpr`,
}

// infoResult is what info reports about one file; --json prints it as is.
type infoResult struct {
	File      string `json:"file"`
	Type      string `json:"type"`
	FormatVer int    `json:"format_version"`
	SizeBytes int64  `json:"size_bytes"`
	M         uint64 `json:"m"`
	K         uint32 `json:"k"`
	// Seed is a string in JSON: a 64-bit number, which JSON tools that
	// read numbers as doubles (jq, JavaScript) would round.
	Seed     uint64  `json:"seed,string"`
	PlannedN uint64  `json:"planned_n"`
	PlannedP float64 `json:"planned_p"`
	// Items is null when the filter is saturated (every bit set): it then
	// holds more than SaturatedAbove keys, by an unknown amount.
	Items          *uint64 `json:"items"`
	ItemsExact     bool    `json:"items_exact"`
	Saturated      bool    `json:"saturated"`
	SaturatedAbove uint64  `json:"saturated_above,omitempty"`
	// OverPlanned: the items exceed planned_n by more than the estimate's
	// statistical noise.
	OverPlanned  bool     `json:"over_planned"`
	FillRatio    *float64 `json:"fill_ratio,omitempty"`
	EstimatedFPR *float64 `json:"estimated_fpr,omitempty"`
	// Windows only: the period, the number of generations G and the bits
	// of all G+1 filters (m is one generation's). Ribbon filters: the bits
	// of the solution (total_bits; m is its slots).
	Window      string `json:"window,omitempty"`
	Generations int    `json:"generations,omitempty"`
	TotalBits   uint64 `json:"total_bits,omitempty"`
	// Cuckoo filters only.
	FingerprintBits uint32   `json:"fingerprint_bits,omitempty"`
	Tables          int      `json:"tables,omitempty"`
	LoadFactor      *float64 `json:"load_factor,omitempty"`
	// Count-Min Sketches only: the sum of every increment.
	SketchCount uint64 `json:"sketch_count,omitempty"`
	Checksum    string `json:"checksum"` // ok, mismatch or unverified
	Error       string `json:"error,omitempty"`
}

func runInfo(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("info")
	asJSON := fs.Bool("json", false, "print JSON (one object per file)")
	files, code, ok := parseFlags(fs, infoHelp, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(files) == 0 {
		return usageErr(stderr, "info", "missing the filter FILE")
	}
	status := exitOK
	if err := checkInputs(files); err != nil {
		return usageErr(stderr, "info", "%v", err)
	}
	for i, path := range files {
		res, err := describe(path, stdin)
		if err != nil {
			failf(stderr, "info", "%s", describeErr(err))
			status = exitError
			if res == nil {
				continue
			}
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				return failf(stderr, "info", "stdout: %v", err)
			}
			continue
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printInfo(stdout, res)
	}
	return status
}

// describe reads the filter at path. When the header is sound but the rest
// is not, it returns the header's description along with the error.
func describe(path string, stdin io.Reader) (*infoResult, error) {
	l, err := loadFilterFrom(path, stdin)
	if err != nil {
		if path == "-" {
			return nil, err
		}
		hdr, version, herr := readHeaderOnly(path)
		if herr != nil {
			return nil, err
		}
		res := headerInfo(path, hdr, version)
		if fi, err := os.Stat(path); err == nil {
			res.SizeBytes = fi.Size()
		}
		if errors.Is(err, bloom.ErrChecksum) {
			res.Checksum = "mismatch"
		}
		res.Error = strings.TrimPrefix(err.Error(), path+": ")
		return res, err
	}
	res := headerInfo(l.path, l.hdr, l.version)
	res.Type = l.typeName()
	res.SizeBytes = l.size
	res.Checksum = "ok"
	if res.Type == typeGuava || res.Type == typeBitsAndBlooms {
		res.Checksum = "none"
	}
	fl := fillOf(l.f)
	if fl.count != nil {
		v := *fl.count
		if v == math.MaxUint64 {
			res.Saturated, res.SaturatedAbove = true, saturationBound(l.hdr.M, l.hdr.K)
		} else {
			res.Items = &v
		}
	}
	if l.hdr.Count != 0 {
		v := l.hdr.Count
		res.Items, res.ItemsExact, res.Saturated, res.SaturatedAbove = &v, true, false, 0
	}
	if l.hdr.Type == format.TypeCMS && l.kind == "" {
		res.SketchCount = l.hdr.Count
	}
	if isSketch(res.Type) {
		res.Items, res.ItemsExact = nil, false // a sketch's count is a sum of increments, not keys
	} else if res.Type != "scalable" && res.Type != "cuckoo" && res.Type != "frozen" && res.Type != "ribbon" && res.Type != typeRBBloom && res.Type != typeRBCuckoo {
		switch {
		case res.Saturated:
			res.OverPlanned = res.PlannedN > 0
		case res.Items != nil:
			ps := bloom.Params{M: l.hdr.M, K: l.hdr.K}
			res.OverPlanned = overPlanned(*res.Items, res.PlannedN, ps, res.Type == "blocked", res.ItemsExact)
		}
	}
	res.FillRatio, res.EstimatedFPR = fl.ratio, fl.rate
	if c, ok := l.f.(*cuckoo.Filter); ok {
		st := c.Stats()
		res.LoadFactor, res.FingerprintBits, res.Tables = &st.LoadFactor, c.Config().FingerprintBits, st.Tables
	}
	if rb, ok := l.f.(*frozen.Ribbon); ok {
		res.TotalBits = rb.SizeBits()
	}
	if w, ok := l.f.(*bloom.Window); ok {
		c := w.Config()
		res.Window, res.Generations, res.TotalBits = c.Window.String(), c.Generations, w.Stats().Bits
	}
	return res, nil
}

// fillInfo is what info reports of how full a filter is; nil where its type
// does not say.
type fillInfo struct {
	count       *uint64
	ratio, rate *float64
}

// fillOf returns f's fill: the bloom package's types report it in their
// Stats, the others through methods of their own.
func fillOf(f any) fillInfo {
	if s, ok := f.(interface{ Stats() bloom.Stats }); ok {
		st := s.Stats()
		return fillInfo{&st.ApproxCount, &st.FillRatio, &st.EstimatedFPR}
	}
	var r fillInfo
	if c, ok := f.(*cuckoo.Filter); ok {
		st := c.Stats()
		r.rate = &st.EstimatedFPR
		return r
	}
	if c, ok := f.(interface{ ApproxCount() uint64 }); ok {
		v := c.ApproxCount()
		r.count = &v
	}
	if c, ok := f.(interface{ FillRatio() float64 }); ok {
		v := c.FillRatio()
		r.ratio = &v
	}
	if c, ok := f.(interface{ EstimatedFPR() float64 }); ok {
		v := c.EstimatedFPR()
		r.rate = &v
	}
	return r
}

func headerInfo(path string, h format.Header, version uint16) *infoResult {
	return &infoResult{
		File: path, Type: format.TypeName(h.Type), FormatVer: int(version),
		M: h.M, K: h.K, Seed: h.Seed, PlannedN: h.N, PlannedP: h.P, Checksum: "unverified",
	}
}

// readHeaderOnly reads and checks just the header of a file, and returns
// it with the file's format version.
func readHeaderOnly(path string) (format.Header, uint16, error) {
	f, err := os.Open(path)
	if err != nil {
		return format.Header{}, 0, err
	}
	defer f.Close()
	raw := make([]byte, format.HeaderSize)
	if _, err := io.ReadFull(f, raw); err != nil {
		return format.Header{}, 0, err
	}
	h, err := format.ParseHeader(raw)
	return h, binary.LittleEndian.Uint16(raw[8:]), err
}

func printInfo(w io.Writer, r *infoResult) {
	row := func(k, v string) { fmt.Fprintf(w, "%-13s %s\n", k+":", v) }
	row("file", r.File)
	row("type", r.Type)
	row("size", fmt.Sprintf("%s (%s bytes)", humanBytes(uint64(r.SizeBytes)), commas(uint64(r.SizeBytes))))
	switch r.Type {
	case "scalable":
		// The header's m is the bits of every link together and k the
		// number of links.
		row("bits (m)", commas(r.M)+" in all links")
		row("links", fmt.Sprint(r.K))
	case "cuckoo":
		// The header's m is the first table's buckets and k their size.
		row("buckets", commas(r.M)+" in the first table")
		row("bucket size", fmt.Sprint(r.K))
		if r.FingerprintBits != 0 {
			row("fingerprint", fmt.Sprintf("%d bits", r.FingerprintBits))
			row("tables", fmt.Sprint(r.Tables))
		}
	case "frozen":
		// The header's m is the fingerprints and k their bits.
		row("fingerprints", fmt.Sprintf("%s of %d bits (a binary fuse filter)", commas(r.M), r.K))
		if r.Items != nil && *r.Items > 0 {
			row("bits/key", fmt.Sprintf("%.2f", float64(r.M)*float64(r.K)/float64(*r.Items)))
		}
	case "ribbon":
		// The header's m is the slots and k the narrow blocks' result
		// bits (the wide ones have one more).
		row("slots", fmt.Sprintf("%s of %d or %d result bits (a ribbon filter)", commas(r.M), r.K, r.K+1))
		if r.Items != nil && *r.Items > 0 && r.TotalBits > 0 {
			row("bits/key", fmt.Sprintf("%.2f", float64(r.TotalBits)/float64(*r.Items)))
		}
	case typeRBBloom:
		row("bits (m)", commas(r.M)+" in all links")
		row("links", fmt.Sprint(r.K))
	case typeRBCuckoo:
		row("buckets", commas(r.M)+" in the first sub-filter")
		row("bucket size", fmt.Sprint(r.K))
	case "window":
		// The header's m is one generation's bits; the file holds G+1
		// filters: the G live generations and the one expiring.
		if r.Generations > 0 {
			row("window", fmt.Sprintf("%s in %d generations", r.Window, r.Generations))
			row("bits (m)", fmt.Sprintf("%s a generation, %s in all %d filters", commas(r.M), commas(r.TotalBits), r.Generations+1))
		} else {
			row("bits (m)", commas(r.M)+" a generation")
		}
		row("probes (k)", fmt.Sprint(r.K))
	case "counting":
		row("counters (m)", commas(r.M)+" of 4 bits")
		row("probes (k)", fmt.Sprint(r.K))
	case format.TypeName(format.TypeCMS):
		// The header's m is the width, n the depth, count the sum of the
		// increments (RedisBloom's CMS.INFO).
		row("counters", fmt.Sprintf("%s × %s of 32 bits (width × depth)", commas(r.M), commas(r.PlannedN)))
		row("count", commas(r.SketchCount)+" (the sum of every increment)")
	case format.TypeName(format.TypeTopK):
		// m is the width, k the depth, n the k and p the decay.
		row("top", fmt.Sprintf("%s items", commas(r.PlannedN)))
		row("buckets", fmt.Sprintf("%s × %d (width × depth), decay %g", commas(r.M), r.K, r.PlannedP))
	default:
		row("bits (m)", commas(r.M))
		row("probes (k)", fmt.Sprint(r.K))
	}
	switch {
	case r.Type == typeGuava || r.Type == typeBitsAndBlooms || r.Type == typeRBBloom || r.Type == typeRBCuckoo || isSketch(r.Type):
		// Their hash has no seed to show.
	default:
		row("seed", fmt.Sprintf("%d", r.Seed))
	}
	if isSketch(r.Type) {
		// Sized by their dimensions: nothing planned to show.
	} else if r.Type == typeRBBloom {
		row("planned", fmt.Sprintf("%s keys in all links, first link at %s", commas(r.PlannedN), formatPlanned(r.PlannedP)))
	} else if r.Type == "frozen" {
		row("planned", "every key given at build time; the rate is fixed by the fingerprint size")
	} else if r.Type == "ribbon" {
		row("planned", "every key given at build time, at "+formatPlanned(r.PlannedP))
	} else if r.Type == typeGuava || r.Type == typeBitsAndBlooms || r.Type == typeRBCuckoo {
		row("planned", "not recorded by this format")
	} else if r.Type == "scalable" {
		row("planned", fmt.Sprintf("%s keys in the first link, at most %s in all", commas(r.PlannedN), formatPlanned(r.PlannedP)))
	} else if r.Type == "cuckoo" {
		row("planned", fmt.Sprintf("%s keys in the first table at %s", commas(r.PlannedN), formatPlanned(r.PlannedP)))
	} else if r.PlannedN > 0 || r.PlannedP > 0 {
		row("planned", fmt.Sprintf("%s keys at %s", commas(r.PlannedN), formatPlanned(r.PlannedP)))
	} else {
		row("planned", "sized by hand")
	}
	if r.Items != nil || r.Saturated {
		var v string
		switch {
		case r.Saturated:
			v = fmt.Sprintf("saturated (> %s): every bit is set, so every key tests present", commas(r.SaturatedAbove))
		case r.ItemsExact:
			v = commas(*r.Items)
		default:
			v = "about " + commas(*r.Items) + " (estimated from the bits set)"
		}
		if r.OverPlanned && !r.Saturated {
			v += ", more than planned"
		}
		row("items", v)
	}
	if r.LoadFactor != nil {
		row("load factor", fmt.Sprintf("%.2f%% of the slots", 100**r.LoadFactor))
	}
	if r.FillRatio != nil {
		row("fill ratio", fmt.Sprintf("%.2f%%", 100**r.FillRatio))
	}
	if r.EstimatedFPR != nil {
		rate := *r.EstimatedFPR
		if rate == 0 && ((r.FillRatio != nil && *r.FillRatio > 0) || (r.Items != nil && *r.Items > 0)) {
			// fill^k underflowed: tiny, not 0, for a filter that holds keys.
			rate = math.SmallestNonzeroFloat64
		}
		row("rate now", rateText(rate))
	}
	switch r.Checksum {
	case "ok":
		row("checksum", "ok (CRC-32C of header and data)")
	case "none":
		row("checksum", "none (the format has none; only its length was checked)")
	case "mismatch":
		row("checksum", "MISMATCH: the file is damaged")
	default:
		row("checksum", "not verified: "+r.Error)
	}
}

// isSketch reports whether a type name is a Count-Min Sketch's or a
// Top-K's.
func isSketch(typ string) bool {
	return typ == format.TypeName(format.TypeCMS) || typ == format.TypeName(format.TypeTopK)
}
