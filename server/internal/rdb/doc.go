// Package rdb reads and writes Redis's RDB format: whole files and
// replication payloads (RDB versions 9 to 12, Redis 6.2 to 7.4), and the
// DUMP payload form that DUMP and RESTORE exchange.
//
// Reading. NewReader checks the header; Next returns the stream's records
// one by one: aux fields, keys, and the sections a server may skip
// (function libraries, module aux data). A key's value is decoded when it
// is a string (in every encoding: raw, int8/16/32, LZF) or a module value
// whose type has a ModuleDecoder registered in Options.Modules; any other
// type is skipped and reported in Entry.Err (*TypeError) so the caller can
// stop or count. After the EOF opcode the CRC-64 is checked and Next
// returns io.EOF. Every length in the stream is bounded (Options), and no
// allocation is made for bytes that have not arrived: a hostile stream
// costs at most its own length in memory, beyond what a ModuleDecoder
// agrees to allocate.
//
// Writing. NewWriter writes the header of a chosen version; Aux, SelectDB,
// ResizeDB, String and Module write records; Close writes EOF and the
// checksum. DumpString, DumpModule and ParseDump handle DUMP payloads (a
// value, the 2-byte RDB version and the CRC-64).
//
// Module values (RDB_TYPE_MODULE_2) are self-describing: each field
// carries an opcode (signed, unsigned, float, double, string), so a value
// of a type nobody decodes is skipped exactly, and a ModuleDecoder reads
// and a ModuleEncoder writes fields through ModuleReader and ModuleWriter,
// as a Redis module's rdb_load and rdb_save do.
//
// RedisBloom's filters (module types MBbloom-- and MBbloomCF) are
// decoded by RedisBloomDecoders into *redisbloom.Bloom and
// *redisbloom.Cuckoo and written through BloomValue and CuckooValue; the
// field layouts themselves live in the redisbloom package. Its Count-Min
// Sketch and Top-K (CMSk-TYPE, TopK-TYPE) are decoded by
// AddSketchDecoders into *cms.Sketch and *topk.TopK and written through
// CMSValue and TopKValue (sketch.go).
//
// Why our own code: the Go RDB libraries we weighed (hdt3213/rdb,
// cupcake/rdb, tommy351/rdb-go) parse Redis's own data types into their
// object models, none hands a module value's fields to a decoder of the
// caller's, none bounds allocations against hostile input, and the
// writers cannot produce module values or DUMP payloads. What bloomkit
// needs (strings, expiries, module values, exact skipping of the rest) is
// a few hundred lines of the standard library.
//
// The package knows nothing of the server: it deals in keys, bytes and
// decoded values.
package rdb
