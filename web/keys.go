package web

// keys builds the Redis keys the edge uses, under the key prefix. The rate
// limiter puts "rate:" before each (redis_rate's own prefix).
type keys struct{ prefix string }

// limit is the key of one rate limit for one client: an address or a uid.
func (k keys) limit(name, who string) string { return k.prefix + "limit:" + name + ":" + who }
