package server

// RedisBloom 8's module configuration parameters: the defaults that
// BF.ADD, BF.MADD, BF.INSERT, CF.ADD and CF.INSERT use when they create a
// filter, and some of the limits BF.RESERVE and CF.RESERVE check. They are
// CONFIG GET/SET parameters and config-file directives with RedisBloom's
// names, ranges, defaults and errors; "loadmodule …redisbloom.so ARGS"
// lines of a Redis config file set them too.
//
// A filter created with non-default parameters is logged with them (a
// BF.RESERVE or CF.RESERVE ahead of the command, in one record): what the
// log replays, and what a replica applies, does not depend on the
// configuration of the server that reads it.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bloomkit/bloomkit/server/internal/resp"
)

// filterParam describes one parameter.
type filterParam struct {
	name   string
	legacy string // the module-argument name RedisBloom accepted before 8 ("" none)
	float  bool   // a rate in an open range; the others are integers in a closed one
	def    float64
	lo, hi float64
}

// The parameters, in RedisBloom's order; the constants index filterParams.
const (
	fpBFErrorRate = iota
	fpBFInitialSize
	fpBFExpansion
	fpCFBucketSize
	fpCFInitialSize
	fpCFMaxIterations
	fpCFExpansion
	fpCFMaxExpansions
	numFilterParams
)

var filterParams = [numFilterParams]filterParam{
	fpBFErrorRate:     {name: "bf-error-rate", legacy: "ERROR_RATE", float: true, def: 0.01, lo: 0, hi: 1},
	fpBFInitialSize:   {name: "bf-initial-size", legacy: "INITIAL_SIZE", def: 100, lo: 1, hi: 1 << 30},
	fpBFExpansion:     {name: "bf-expansion-factor", def: 2, lo: 0, hi: 32768},
	fpCFBucketSize:    {name: "cf-bucket-size", def: 2, lo: 1, hi: 255},
	fpCFInitialSize:   {name: "cf-initial-size", def: 1024, lo: 4, hi: 1 << 30},
	fpCFMaxIterations: {name: "cf-max-iterations", def: 20, lo: 1, hi: 65535},
	fpCFExpansion:     {name: "cf-expansion-factor", def: 1, lo: 0, hi: 32768},
	fpCFMaxExpansions: {name: "cf-max-expansions", legacy: "CF_MAX_EXPANSIONS", def: 32, lo: 1, hi: 65536},
}

// filterConfig is one immutable state of the parameters; a CONFIG SET
// installs a new one.
type filterConfig struct {
	val [numFilterParams]float64
	str [numFilterParams]string // as given: CONFIG GET answers it
	// RedisBloom ties two ranges to the other parameter's value: the
	// initial size is at least twice the bucket size, and the bucket size
	// at most half the initial size (and 255).
	cfInitialMin, cfBucketMax int64
}

func defaultFilterConfig() *filterConfig {
	fc := &filterConfig{cfInitialMin: int64(filterParams[fpCFInitialSize].lo), cfBucketMax: int64(filterParams[fpCFBucketSize].hi)}
	for i, p := range filterParams {
		fc.val[i] = p.def
		fc.str[i] = formatFilterValue(p.def)
	}
	return fc
}

func formatFilterValue(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func (fc *filterConfig) int(i int) int64 { return int64(fc.val[i]) }

// bloomDefaults reports whether the parameters Bloom filters are created
// with are RedisBloom's defaults; cuckooDefaults, the cuckoo filters'.
func (fc *filterConfig) bloomDefaults() bool {
	return fc.val[fpBFErrorRate] == filterParams[fpBFErrorRate].def &&
		fc.val[fpBFInitialSize] == filterParams[fpBFInitialSize].def &&
		fc.val[fpBFExpansion] == filterParams[fpBFExpansion].def
}

func (fc *filterConfig) cuckooDefaults() bool {
	return fc.val[fpCFInitialSize] == filterParams[fpCFInitialSize].def &&
		fc.val[fpCFBucketSize] == filterParams[fpCFBucketSize].def &&
		fc.val[fpCFMaxIterations] == filterParams[fpCFMaxIterations].def &&
		fc.val[fpCFExpansion] == filterParams[fpCFExpansion].def
}

// with returns a copy of fc with parameter i set to v, or RedisBloom's
// error for the value.
func (fc *filterConfig) with(i int, v string) (*filterConfig, error) {
	p := filterParams[i]
	lo, hi := p.lo, p.hi
	switch i {
	case fpCFInitialSize:
		lo = float64(fc.cfInitialMin)
	case fpCFBucketSize:
		hi = float64(fc.cfBucketMax)
	}
	next := *fc
	if p.float {
		f, ok := resp.ParseFloat([]byte(v))
		if !ok || math.IsNaN(f) {
			return nil, errConfigValue("Invalid value for `" + p.name + "`")
		}
		if !(f > lo && f < hi) {
			return nil, errConfigValue(fmt.Sprintf("Value for `%s` must be in the range (%f, %f)", p.name, lo, hi))
		}
		if i == fpBFErrorRate && f > bfErrorCap {
			f, v = bfErrorCap, formatFilterValue(bfErrorCap)
		}
		next.val[i], next.str[i] = f, v
		return &next, nil
	}
	n, ok := resp.ParseInt([]byte(v))
	if !ok {
		return nil, errConfigValue("Invalid value for `" + p.name + "`")
	}
	if float64(n) < lo || float64(n) > hi {
		return nil, errConfigValue(fmt.Sprintf("Value for `%s` must be in the range [%d, %d]", p.name, int64(lo), int64(hi)))
	}
	next.val[i], next.str[i] = float64(n), v
	switch i {
	case fpCFBucketSize:
		next.cfInitialMin = n * 2
	case fpCFInitialSize:
		next.cfBucketMax = min(n/2, 255)
	}
	return &next, nil
}

// replayFilterConfig is what commands see while the log is replayed
// (and while a replica applies its master's stream):
// RedisBloom's defaults, which a command logged without its filter's
// options was run with (one run with others was logged with them), and
// the widest limits, so that nothing acknowledged is refused because the
// parameters changed since.
var replayFilterConfig = func() *filterConfig {
	fc := defaultFilterConfig()
	fc.cfInitialMin = 2 * int64(filterParams[fpCFBucketSize].lo)
	fc.val[fpCFMaxExpansions] = filterParams[fpCFMaxExpansions].hi
	return fc
}()

// filterConfig is the parameters in force for the command being run.
func (s *Server) filterConfig() *filterConfig {
	if s.db.Loading() || s.db.Following() {
		// Replaying the log, or applying a master's stream: a Redis
		// master's stream (or one a bloom serve master passes on)
		// creates filters as its RedisBloom does (a bloom serve master's
		// own stream logs the parameters it used).
		if fc := s.streamFilters(); fc != nil && s.db.Following() {
			return fc
		}
		return replayFilterConfig
	}
	return s.set.filter.Load()
}

// filterSetting is parameter i as a CONFIG parameter.
func filterSetting(i int) setting {
	return setting{
		name: filterParams[i].name,
		def:  formatFilterValue(filterParams[i].def),
		get:  func(s *Server) string { return s.set.filter.Load().str[i] },
		set: func(s *Server, v string) error {
			next, err := s.set.filter.Load().with(i, v)
			if err == nil {
				s.set.filter.Store(next)
			}
			return err
		},
	}
}

func init() {
	for i := range filterParams {
		settingList = append(settingList, filterSetting(i))
	}
}

// lookupFilterParam finds a parameter by its name (any case).
func lookupFilterParam(name string) (int, bool) {
	for i, p := range filterParams {
		if strings.EqualFold(p.name, name) {
			return i, true
		}
	}
	return 0, false
}

// newFilterConfig applies Config.FilterParams to the defaults, in the
// parameters' fixed order (bf-error-rate first, cf-max-expansions last:
// the tied cuckoo ranges are checked in that order, not in the order of a
// config file's lines). An unknown name or invalid value is an error.
func newFilterConfig(params map[string]string) (*filterConfig, error) {
	fc := defaultFilterConfig()
	for name := range params {
		if _, ok := lookupFilterParam(name); !ok {
			return nil, fmt.Errorf("unknown filter parameter %q", name)
		}
	}
	for i, p := range filterParams {
		for name, v := range params {
			if !strings.EqualFold(name, p.name) {
				continue
			}
			next, err := fc.with(i, v)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", p.name, err)
			}
			fc = next
		}
	}
	return fc, nil
}

// redisBloomModuleArgs reads the arguments of a config file's "loadmodule
// …redisbloom.so ARGS" line as RedisBloom does: name/value pairs of
// bf-error-rate, bf-initial-size and cf-max-expansions, or their old names
// ERROR_RATE, INITIAL_SIZE and CF_MAX_EXPANSIONS; anything else is
// refused, as the module refuses to load.
func redisBloomModuleArgs(args []string, into map[string]string) error {
	if len(args)%2 != 0 {
		return fmt.Errorf("RedisBloom: invalid number of arguments passed")
	}
	for i := 0; i < len(args); i += 2 {
		found := false
		for _, p := range filterParams {
			if p.legacy == "" {
				continue
			}
			if strings.EqualFold(args[i], p.legacy) || strings.EqualFold(args[i], p.name) {
				into[p.name] = args[i+1]
				found = true
			}
		}
		if !found {
			return fmt.Errorf("RedisBloom: unrecognized option %q", args[i])
		}
	}
	return nil
}
