package server

// invalidateFilterStats makes the next scrape compute the per-filter
// series again (each benchmark iteration measures the full work).
func invalidateFilterStats(s *Server) {
	s.filterStats.mu.Lock()
	s.filterStats.rows = nil
	s.filterStats.mu.Unlock()
}
