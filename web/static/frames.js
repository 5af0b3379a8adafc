// What each stream frame does, while signed in: `ready` refreshes who you
// are, the friends online and the counts; a status goes into the home feed
// (announced, or counted on the Home link while you are elsewhere); a
// deletion leaves every timeline, as do the posts of whom you block or
// mute (on any device); presence, friendships and followers
// reach the sidebar and the page shown, which sees every frame first
// through its onFrame; notifications and their reading reach the bell.
// What a status's action row counts follows live: a reply arriving or
// deleted, or a like or repost of yours undone, has the counts of the status it
// concerns read again (actions.js countsChanged); a like or repost of
// yours brings its counts (actions.js countsRaised).

import { announce } from './dom.js';
import { learnName } from './names.js';
import { countsRaised, replyAdded, countsChanged } from './actions.js';
import { relationChanged } from './safety.js';

// Arrivals this close together (a resume can bring dozens at once) make
// one announcement.
const BATCH_MS = 800;
// The most arrivals counted on the Home link that a deletion can take off.
const MAX_COUNTED = 1000;

// How many notifications' statuses are remembered, for the counts to read
// again when one is taken back (an unlike): the newest told live.
const NOTED_MAX = 500;

/** Frames dispatches the frames of one Session; app is as the Session's. */
export class Frames {
  constructor(session, app) {
    this.session = session;
    this.app = app;
    this.newBatch = [];
    this.batchTimer = 0;
    this.counted = new Set(); // ids of the arrivals the Home link counts
    this.noted = new Map(); // notification id -> the status whose counts it changed
  }

  /** ready takes the `ready` frame of each (re)connection. */
  ready(frame) {
    const session = this.session;
    if (session.closed) return;
    if (frame.user) {
      session.me = { ...session.me, ...frame.user };
      this.app.header.setName(session.me);
    }
    session.health.setService(true); // `ready` comes only from a server that can serve
    session.sidebar.setSnapshot(frame.online_friends);
    session.notes.setUnread(frame.unread_notifications);
    // The counts fetched at sign-in predate this connection, so they left
    // you out; an instance may still serve those for a heartbeat interval,
    // which the poll this sets outlasts.
    session.siteCountsPace(frame.heartbeat_interval_ms);
    session.refreshSiteCounts();
    const view = this.app.view();
    if (view && view.onReady) view.onReady();
  }

  /** dispatch takes every frame after `ready`. */
  dispatch(frame) {
    const session = this.session;
    if (session.closed) return;
    if (frame.type === 'service') {
      session.health.setService(frame.available !== false);
      return;
    }
    const view = this.app.view();
    if (frame.type !== 'status_deleted' && view && view.onFrame) view.onFrame(frame);
    switch (frame.type) {
      case 'status': {
        const s = frame.status;
        if (!s) return;
        const feed = this.app.ctx.homeFeed;
        const added = feed.add(s, { complete: true });
        // A feed not read yet (Home not shown since the page opened) holds
        // nothing to add to, but what comes is new to its reader all the
        // same: the Home link counts it.
        if ((added || !feed.loaded) && s.uid !== session.me.id) this.noteNew(s);
        if (s.reply_to && !s.repost_of) replyAdded(s.reply_to.id, { id: s.id });
        break;
      }
      case 'status_deleted':
        this.app.removeStatus(frame.id);
        this.unnoteNew(frame.id);
        // A reply's names what it answered, whose replies went down by one.
        if (frame.reply_to) countsChanged(frame.reply_to);
        // Yours (deleted on another device, say), it took its likes' and
        // reposts' notifications with it, with no frame; anyone else's
        // took none of yours.
        if (frame.uid === session.me.id) session.notes.changed();
        break;
      case 'presence': {
        const made = session.friendsKnown && frame.user && !session.sidebar.has(frame.user.login);
        session.sidebar.presence(frame);
        if (made) this.followsChanged(frame.user);
        session.siteCountsSoon();
        break;
      }
      case 'profile':
        // Someone (you, or a friend) took a new name: the sidebar, the
        // header and the names learned show it from now on.
        if (!frame.user || !frame.user.login) break;
        learnName(frame.user);
        session.sidebar.rename(frame.user);
        if (frame.user.id === session.me.id) {
          session.me.name = frame.user.name;
          this.app.header.setName(session.me);
        }
        break;
      case 'relation':
        // A block or mute of yours, made or taken back here or elsewhere.
        if (!frame.user || !frame.user.login || (frame.kind !== 'block' && frame.kind !== 'mute')) break;
        relationChanged(this.app.ctx, frame.kind === 'block' ? 'blocks' : 'mutes', frame.user.login, frame.on === true);
        break;
      case 'friend_removed':
        session.sidebar.removeFriend(frame.user);
        if (frame.user) this.followsChanged(frame.user);
        break;
      case 'followed':
        if (frame.user) this.followsChanged(frame.user);
        break;
      case 'notification':
        session.notes.notification(frame.notification);
        this.noteCounts(frame.notification);
        break;
      case 'notification_removed':
        session.notes.removed(frame.id);
        this.countsUndone(frame.id, frame.counts_of);
        break;
      case 'notifications_removed':
        // A block or a mute took the other's notifications.
        session.notes.removedMany(frame.ids);
        break;
      case 'notifications_read':
        session.notes.read(frame.last_read);
        break;
      case 'global_status': {
        // A reply by someone you do not follow counts on the post it
        // answers, if shown, as one told by its status frame does.
        const s = frame.status;
        if (s && s.reply_to && !s.repost_of) replyAdded(s.reply_to.id, { id: s.id });
        break; // and the global timeline's, as below
      }
      case 'global_status_deleted':
        // A reply by someone you do not follow, whose post on screen
        // answered: its count is read again, as for status_deleted.
        if (frame.reply_to) countsChanged(frame.reply_to);
        break; // otherwise the global timeline's, as below
      case 'thread_status': {
        // A reply in the thread a status's page watches: it counts on the
        // post it answers, as a global_status does, and the page puts it
        // in place (statuspage.js).
        const s = frame.status;
        if (s && s.reply_to && !s.repost_of) replyAdded(s.reply_to.id, { id: s.id });
        break;
      }
      case 'thread_status_deleted':
        // A status of the watched thread deleted: it leaves the page as
        // one of yours deleted elsewhere does, and what it answered counts
        // one reply less.
        this.app.removeStatus(frame.id);
        if (frame.reply_to) countsChanged(frame.reply_to);
        break;
      case 'watching':
        break; // for the page that watches (views.js globalView, statuspage.js)
      case 'error':
        console.warn('stream error frame', frame.code, frame.message);
        break;
      default:
        // Unknown types are extensions this client predates.
    }
  }

  // noteCounts shows what notification n changed on the rows of its
  // status: a like's or repost's status is yours, with its counts as
  // read just before the frame went (an older server's has none: they
  // are read again); a count only goes up by them, since a frame read
  // earlier can come last, and your own liked and reposted are left to
  // your actions' answers. A reply counts on what it answers (once,
  // however it is told).
  noteCounts(n) {
    const s = n && n.status;
    if (!s || !s.id) return;
    let counts = null;
    if (n.type === 'liked' || n.type === 'reposted') {
      if (typeof s.likes === 'number') countsRaised(s);
      else countsChanged(s.id);
      counts = s.id;
    } else if ((n.type === 'replied' || n.type === 'mentioned') && s.reply_to && !s.repost_of) {
      replyAdded(s.reply_to.id, { id: s.id });
      counts = s.reply_to.id;
    }
    if (counts === null || !n.id) return;
    this.noted.set(Number(n.id), Number(counts));
    if (this.noted.size > NOTED_MAX) this.noted.delete(this.noted.keys().next().value);
  }

  // countsUndone reads again the counts of the status notification id
  // changed, now undone (an unlike, an unrepost, a reply deleted): the
  // frame names it (countsOf), and an older server's said only which
  // notification went, found among those told live here.
  countsUndone(id, countsOf) {
    const sid = countsOf || this.noted.get(Number(id));
    this.noted.delete(Number(id));
    if (sid) countsChanged(sid);
  }

  // followsChanged tells the page that user followed you, or that a
  // friendship with them was made or ended: counts on a profile change.
  followsChanged(user) {
    const view = this.app.view();
    if (view && view.onFollows) view.onFollows(user);
  }

  // noteNew batches arrivals into one announcement, or a count on the
  // Home link while you are elsewhere. The batch's time runs from its first
  // arrival: put off by each, it would never end on a feed busier than one
  // post per BATCH_MS.
  noteNew(status) {
    const id = Number(status.id);
    if (this.counted.has(id) || this.newBatch.some((s) => Number(s.id) === id)) return; // told twice (a resume)
    this.newBatch.push(status);
    if (this.batchTimer) return;
    this.batchTimer = setTimeout(() => {
      this.batchTimer = 0;
      if (this.session.closed) return;
      const batch = this.newBatch;
      this.newBatch = [];
      if (!batch.length) return; // deleted before they were told
      const route = this.app.route();
      if (route && route.name === 'home') {
        const s = batch[0];
        announce(batch.length === 1 ? `New post from ${s.login}: ${String(s.message).slice(0, 140)}` : `${batch.length} new posts`);
      } else {
        // Nothing counted: what was counted before has been seen since.
        if (!this.session.unseen) this.counted.clear();
        for (const s of batch) this.counted.add(Number(s.id));
        // Home never looked at on a busy feed: the newest are kept, those
        // older leave the count as it stands if deleted.
        for (const old of this.counted) {
          if (this.counted.size <= MAX_COUNTED) break;
          this.counted.delete(old);
        }
        this.session.setUnseen(this.session.unseen + batch.length);
      }
    }, BATCH_MS);
  }

  // unnoteNew takes a deleted status out of the arrivals not told yet, or
  // out of the Home link's count: nothing new waits there for it.
  unnoteNew(id) {
    const n = Number(id);
    this.newBatch = this.newBatch.filter((s) => Number(s.id) !== n);
    if (this.counted.delete(n) && this.session.unseen > 0) this.session.setUnseen(this.session.unseen - 1);
  }

  /** close drops arrivals not yet announced. */
  close() {
    clearTimeout(this.batchTimer);
    this.batchTimer = 0;
    this.newBatch = [];
    this.counted.clear();
  }
}
