package kafkaapi

// APIs is a handler package's list of the APIs it serves. Each API's file
// declares it in its init (versions, handler and ACL rule in one file), and
// the package registers the list with a broker's Registry once its
// handlers of type H exist: the package-level list holds no broker state,
// so several brokers in one process each register their own handlers.
type APIs[H any] []declared[H]

type declared[H any] struct {
	key, min, max int16
	serve         func(H) Serve
}

// Add declares that the package serves key in versions min..max with
// serve(h).
func (a *APIs[H]) Add(key, min, max int16, serve func(H) Serve) {
	*a = append(*a, declared[H]{key, min, max, serve})
}

// Register adds every declared API, served by h, to r.
func (a APIs[H]) Register(r *Registry, h H) {
	for _, x := range a {
		r.Register(x.key, x.min, x.max, x.serve(h))
	}
}
