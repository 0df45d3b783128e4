// Package resp is the server's protocol codec: the one reader of Redis
// requests (RESP arrays and inline commands), which enforces every request
// limit before it allocates, the writer of replies in RESP2 or RESP3, and
// the parsers of numeric arguments that follow Redis's own rules.
//
// It knows nothing of commands or of the keyspace: the server decides
// what a request means and what to answer; this package only decides where
// a request starts and ends and how an answer is spelled.
package resp
