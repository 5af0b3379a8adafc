package main

// friends are a storm's friendships: observers[m] are the observers (by
// number) that mover m is friends with.
type friends struct {
	movers    int
	observers [][]int
}

// buildFriends gives each of movers k friends among observers, taken round
// robin, so that every observer has about movers × k / observers mover
// friends, and no mover has one twice as long as k ≤ observers.
func buildFriends(movers, observers, k int) friends {
	f := friends{movers: movers, observers: make([][]int, movers)}
	for m := range movers {
		f.observers[m] = make([]int, k)
		for j := range k {
			f.observers[m][j] = (m*k + j) % observers
		}
	}
	return f
}

// edges lists the follows the friendships need, both ways, by login:
// users[m] is mover m and users[movers+o] observer o.
func (f friends) edges(users []benchUser) []edge {
	var out []edge
	for m, os := range f.observers {
		for _, o := range os {
			mover, observer := users[m].Login, users[f.movers+o].Login
			out = append(out, edge{Follower: mover, Author: observer}, edge{Follower: observer, Author: mover})
		}
	}
	return out
}
