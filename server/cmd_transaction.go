package server

// Transactions: MULTI, DISCARD, WATCH (EXEC is run by the dispatcher, server.go).

func cmdMulti(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi != nil {
		r.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = []queued{{}}
	c.multiErr = false
	c.txnLen.Store(1)
	r.OK()
}

func cmdDiscard(s *Server, c *Session, args [][]byte, r *Reply) {
	if c.multi == nil {
		r.Error("ERR DISCARD without MULTI")
		return
	}
	c.multi, c.multiErr = nil, false
	c.txnLen.Store(0)
	r.OK()
}

// WATCH is refused: optimistic locking is not implemented.
func cmdWatch(s *Server, c *Session, args [][]byte, r *Reply) {
	if lowerName(args[0]) == "unwatch" {
		r.OK()
		return
	}
	if c.multi != nil {
		r.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	r.Error("ERR WATCH is not supported by bloomkit")
}
