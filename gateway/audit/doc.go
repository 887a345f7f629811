// Package audit records what the gateway does as typed, hash-chained,
// durable records. Audit is not logging: slog is for operators and may
// drop or reword lines; an audit record is written and fsynced before the
// action it records is answered, and any later change to the log is
// detectable with Verify.
//
// # File format
//
// A log is a file of JSON lines (JSONL), one Event per line, each line
// ending in '\n'. Line n holds the record with "seq": n. The first record
// has "prev_hash": ""; every later record's prev_hash is the previous
// record's hash. A line is at most MaxRecordSize bytes.
//
// # Canonical encoding and hash
//
// A record's canonical encoding is the JSON object that encoding/json
// produces for the Event struct with HTML escaping off: no whitespace,
// members in the struct's field order (seq, id, time, prev_hash, kind,
// principal{issuer, subject, tenant, client_id, scopes}, session,
// sandbox_id, container_id, tool, request_id, args_digest, summary,
// outcome, error, deny_reason, exit_code, duration_ms, cpu_ms,
// memory_peak_bytes, oom_killed, timed_out, connection{proxy, asked,
// host, port, sni, ip, rule, status, closed, bytes_up, bytes_down,
// unrecorded}, hash); seq, id, time, prev_hash, kind and principal
// always present, every other member omitted when empty, zero or false
// (exit_code when null; 0 is written); summary keys sorted by byte value;
// time in RFC 3339 with up to nine fractional digits, trailing zeros
// dropped, always "Z"; strings are valid UTF-8 (Append replaces each run
// of invalid bytes in any string field, summary keys included, with
// U+FFFD before sealing, so no record holds the escape \ufffd) and escape
// '"', '\\', control characters (\b \f \n \r \t, others as \u00xx) and
// U+2028/U+2029 and nothing else.
//
// hash is "sha256:" followed by the lowercase hex SHA-256 of the canonical
// encoding with the hash member omitted. Every line is exactly the
// canonical encoding of its record, hash included, and hash is its last
// member. So an external verifier needs no JSON encoder: for each line,
// cut the final `,"hash":"sha256:<64 hex>"` before the closing brace, hash
// the rest, compare, then parse the line with any JSON parser to check seq
// and prev_hash. Verify additionally rejects lines that are not in
// canonical form (unknown members, reordered keys, added whitespace).
// testdata/record.golden.jsonl pins the format.
//
// # Guarantees
//
//   - FileSink.Append returns nil only after the record was written and
//     fsynced. Concurrent appends are serialized by one writer goroutine
//     and share an fsync (group commit); seq order is the order in which
//     they reached the writer.
//   - If a write or fsync fails (disk full, read-only file system), Append
//     returns an error wrapping ErrUnavailable and truncates the file back
//     to its last durable record, so the log stays verifiable and the next
//     successful Append continues the chain. If even that truncation
//     fails, the sink refuses all further appends until reopened.
//   - A crash can leave an incomplete last line, which was never
//     acknowledged. OpenFile moves it into a separate file and continues
//     the chain after the last complete record; nothing is deleted.
//     Complete records of a batch whose fsync had not returned stay in the
//     chain: the log may hold an action that was refused, never lack one
//     that ran.
//   - The chain detects changed, inserted, deleted and reordered records;
//     it cannot detect records cut off the end, or a whole log rewritten
//     by someone who can write the file. Keep Report.LastHash (or the last
//     record) somewhere the gateway host cannot rewrite to catch both.
package audit
