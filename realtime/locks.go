package realtime

// The order of realtime's locks. A goroutine that holds one of them takes
// only those after it in this list, never one before, and never waits for
// a goroutine that may be waiting for one it holds:
//
//  1. Hub.mu (hub.go): the local users, the pulled authors' readers and the
//     state of each channel, and the global timeline's watchers. The
//     router holds it (read-locked) while it hands a frame to every
//     connection of a user, or to every watcher; the subscriber, joins,
//     leaves, the session checker and Shutdown hold it while they change
//     or list those maps. Under it a connection is only queued to (enqueue)
//     or closed with closeSoon, whose closing handshake runs in a goroutine
//     of its own; never with close, which waits for the client.
//  2. presenceGate.mu (coalesce.go): a connection's held-back presence
//     frames. Taken alone or under Hub.mu; flushPresence queues the frame
//     it lets through under it (enqueue, which takes the locks below), so
//     that a friend_removed queued after drop comes after that frame.
//  3. conn.mu (conn.go): a connection's socket and why it closed. Taken
//     under Hub.mu when a full queue or an ended session closes the
//     connection (conn.end); it is let go before the close frame is written.
//  4. queue.mu (queue.go): a connection's queue of frames. Taken alone or
//     under the locks above, and takes no other: a full queue is closed
//     after queue.mu is let go.
//  5. eventStream.mu (events.go): an event stream's connection, one write
//     at a time. Taken by the writer, the pinger and the close, under no
//     lock of this list, and takes none.
//  6. beats.flushing, then beats.mu (beats.go): the activity waiting for
//     the next flush to presence. Neither is taken with any lock above:
//     a connection adds its activity from its reader or its ping timer, and
//     run waits for a flush (settle) once the connection is closed.
//     beats.flushing is held across the flush's Redis call.
//  7. channelChanges.mu (resync.go): the channels held for the subscriber.
//     Taken alone or under Hub.mu, and takes none.
//  8. Hub.postedMu (events.go): the frames posted for streams here, waiting
//     their turn. Taken alone or under Hub.mu, and takes none.
//
// The bus's subscriber (Hub.ps, package bus) has locks of its own: on a cluster, a
// shard's, which it holds while it hands the router a message or a
// confirmation, and the router then takes Hub.mu. So Hub.mu is never held across a call into
// Hub.ps (Subscribe, Unsubscribe, Close) nor across a send that can block:
// join, leave, setPull and watch ask the subscriber for a change (resync) after
// they let Hub.mu go, and restart only wakes the session checker if it is
// not woken already. And the router never waits for the subscriber, which
// may be waiting in Hub.ps for the router to read: a change asked for is
// held in a set (channelChanges), never sent on a channel that can fill.
