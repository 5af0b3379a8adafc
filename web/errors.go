package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"chorus/presence"
	"chorus/protocol"
	"chorus/realtime"
	"chorus/social"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/redis/go-redis/v9"
)

// apiError is an answer in the API's one error shape, with its HTTP status.
type apiError struct {
	Status int
	Body   protocol.Error
}

func (e *apiError) Error() string { return e.Body.Code + ": " + e.Body.Message }

func newError(status int, code, message string) *apiError {
	return &apiError{Status: status, Body: protocol.Error{Code: code, Message: message}}
}

// write answers with e.
func (e *apiError) write(w http.ResponseWriter) {
	writeJSON(w, e.Status, protocol.ErrorBody{Error: e.Body})
}

// userStreamsRetryAfter is the Retry-After, in seconds, of a stream refused
// because its user holds all the streams one user may.
const userStreamsRetryAfter = 30

var (
	errNotSignedIn     = newError(http.StatusUnauthorized, "not_signed_in", "Sign in first.")
	errBadOrigin       = newError(http.StatusForbidden, "forbidden_origin", "This origin may not act for a signed-in user.")
	errBadStreamOrigin = newError(http.StatusForbidden, "forbidden_origin", "This origin may not open a stream.")
	errTooLarge        = newError(http.StatusRequestEntityTooLarge, "too_large", "The request body is over 64 KiB.")
	errNotFound        = newError(http.StatusNotFound, "not_found", "There is nothing here.")
	errNoRedis         = newError(http.StatusServiceUnavailable, "redis_unavailable", "The data store is unavailable; try again shortly.")
	errRedisFull       = newError(http.StatusServiceUnavailable, "redis_unavailable", "The data store is full and takes no writes; try again later.")
	errTimedOut        = newError(http.StatusServiceUnavailable, "timeout", "The request took longer than the server allows; try again shortly.")
	errInternal        = newError(http.StatusInternalServerError, "internal_error", "Something went wrong on our side.")
	errNotAllowed      = newError(http.StatusMethodNotAllowed, "method_not_allowed", "This method is not allowed here.")
	errBothCursors     = newError(http.StatusBadRequest, "invalid_cursor", "Give before or after, not both.")
	errUnknownStatus   = newError(http.StatusNotFound, "status_not_found", "No such status.")
	errUnknownUser     = newError(http.StatusNotFound, "not_found", "No such user.")
	errUnknownParent   = newError(http.StatusNotFound, "not_found", "The status replied to does not exist or was deleted.")
	errUnknownList     = newError(http.StatusNotFound, "list_not_found", "No such list.")
	// Refusals of a stream request, before its upgrade.
	errNotWebSocket       = newError(http.StatusUpgradeRequired, "upgrade_required", "This endpoint speaks WebSocket, or Server-Sent Events to a request that accepts text/event-stream.")
	errStreamSessionEnded = newError(http.StatusUnauthorized, "not_signed_in", "This session has ended; sign in again.")
	errTooManyUserStreams = newError(http.StatusTooManyRequests, "too_many_user_streams",
		"You have as many streams open as one user may; close one (another tab or device) and connect again.")
	errTooManyStreams    = newError(http.StatusServiceUnavailable, "too_many_streams", "This instance holds all the streams it can; connect again shortly.")
	errShuttingDown      = newError(http.StatusServiceUnavailable, "shutting_down", "This instance is shutting down; connect again.")
	errStreamUnavailable = newError(http.StatusServiceUnavailable, "redis_unavailable", "Live updates are unavailable right now; try again shortly.")

	errNotJSON = newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "Send the body as JSON, with Content-Type: application/json.")
)

// writeError answers err in the API's error shape. Errors of the domain map
// to their status; anything else is logged and answered 503 when Redis is
// unreachable, else 500.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var inv *social.InvalidError
	var limited *rateLimitedError
	var throttled *social.RateLimitError
	var badFrame *realtime.FrameError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", retryAfter(limited.retryAfter))
		ae = newError(http.StatusTooManyRequests, "rate_limited", limited.message+" Try again in "+humanDuration(limited.retryAfter)+".")
	case errors.As(err, &throttled) && throttled.Account:
		w.Header().Set("Retry-After", retryAfter(throttled.RetryAfter))
		ae = newError(http.StatusTooManyRequests, "rate_limited", "Too many failed sign-ins for this login from addresses it has not signed in from; "+
			"try again in "+humanDuration(throttled.RetryAfter)+", or from a device that signed in to it before.")
	case errors.As(err, &throttled):
		w.Header().Set("Retry-After", retryAfter(throttled.RetryAfter))
		ae = newError(http.StatusTooManyRequests, "rate_limited", "Too many failed sign-ins for this login from your address; try again in "+
			humanDuration(throttled.RetryAfter)+".")
	case errors.Is(err, social.ErrBusy):
		w.Header().Set("Retry-After", "1")
		ae = newError(http.StatusTooManyRequests, "server_busy", "The server is busy checking passwords; try again in a moment.")
	case errors.As(err, &inv):
		ae = newError(http.StatusBadRequest, "invalid_"+inv.Field, "The "+inv.Field+" "+inv.Message+".")
	case errors.Is(err, social.ErrUserNotFound):
		ae = errUnknownUser
	case errors.Is(err, social.ErrStatusNotFound):
		ae = errUnknownStatus
	case errors.Is(err, social.ErrLoginTaken):
		ae = newError(http.StatusConflict, "login_taken", "That login is taken.")
	case errors.Is(err, social.ErrInvalidCredentials):
		ae = newError(http.StatusUnauthorized, "invalid_credentials", "The login or password is wrong.")
	case errors.Is(err, social.ErrListNotFound):
		ae = errUnknownList
	case errors.Is(err, social.ErrNotListOwner):
		// Lists are private: to anyone but its owner a list is none, so
		// that a refusal tells nobody which ids are taken.
		ae = errUnknownList
	case errors.Is(err, social.ErrTooManyLists):
		ae = newError(http.StatusConflict, "too_many_lists",
			fmt.Sprintf("You have %d lists, as many as one may; delete one first.", social.MaxListsPerUser))
	case errors.Is(err, social.ErrListFull):
		ae = newError(http.StatusConflict, "list_full",
			fmt.Sprintf("This list has %d members, as many as a list may; remove one first.", social.MaxListMembers))
	case errors.Is(err, social.ErrNotFollowing):
		ae = newError(http.StatusUnprocessableEntity, "not_following", "Only accounts you follow can be put in your lists; follow them first.")
	case errors.Is(err, social.ErrNotOwner):
		ae = newError(http.StatusForbidden, "not_owner", "Only its author can delete a status.")
	case errors.Is(err, social.ErrSuspended):
		ae = newError(http.StatusForbidden, "suspended", "This account is suspended by the site's admins.")
	case errors.Is(err, social.ErrReportNotFound):
		ae = newError(http.StatusNotFound, "report_not_found", "No such report.")
	case errors.Is(err, social.ErrSelfFollow):
		ae = newError(http.StatusBadRequest, "cannot_follow_self", "You cannot follow yourself.")
	case errors.Is(err, social.ErrSelfBlock):
		ae = newError(http.StatusBadRequest, "cannot_block_self", "You cannot block or mute yourself.")
	case errors.Is(err, social.ErrBlocked):
		ae = newError(http.StatusForbidden, "blocked", "You cannot do this: one of you blocks the other.")
	case errors.Is(err, social.ErrTooManyBlocks):
		ae = newError(http.StatusConflict, "too_many_blocks",
			fmt.Sprintf("You block %d accounts, as many as one may; unblock one first.", social.MaxBlocks))
	case errors.Is(err, social.ErrTooManyMutes):
		ae = newError(http.StatusConflict, "too_many_mutes",
			fmt.Sprintf("You mute %d accounts, as many as one may; unmute one first.", social.MaxMutes))
	case errors.Is(err, social.ErrTooManyFollowing):
		ae = newError(http.StatusConflict, "too_many_following",
			fmt.Sprintf("You follow as many accounts as one may (%d, suspended ones included); unfollow one first.", s.social.MaxFollowing()))
	case errors.Is(err, social.ErrRegistrationsClosed):
		ae = newError(http.StatusForbidden, "registrations_closed", "Sign-ups are closed on this site; no new accounts are being made.")
	case errors.Is(err, social.ErrApprovalPending):
		ae = newError(http.StatusForbidden, "approval_pending", "This account waits for an admin's approval; you can sign in once it is approved.")
	case errors.Is(err, social.ErrNotAdmin):
		ae = newError(http.StatusForbidden, "not_admin", "Only an admin of this site may do this.")
	case errors.Is(err, social.ErrSuspendAdmin):
		ae = newError(http.StatusForbidden, "cannot_suspend_admin",
			"An admin cannot be suspended; the site's operator takes them out of the admins first.")
	case errors.Is(err, social.ErrUnauthenticated):
		ae = errNotSignedIn
	case errors.Is(err, realtime.ErrNotWebSocket):
		ae = errNotWebSocket
	case errors.As(err, &badFrame):
		ae = newError(http.StatusBadRequest, badFrame.Code, badFrame.Message)
	case errors.Is(err, realtime.ErrUnknownStream):
		ae = errUnknownStream
	case errors.Is(err, realtime.ErrSessionEnded):
		ae = errStreamSessionEnded
	case errors.Is(err, presence.ErrTooManyConnections):
		w.Header().Set("Retry-After", strconv.Itoa(userStreamsRetryAfter))
		ae = errTooManyUserStreams
	case errors.Is(err, realtime.ErrTooManyStreams):
		w.Header().Set("Retry-After", "5")
		ae = errTooManyStreams
	case errors.Is(err, realtime.ErrShuttingDown):
		ae = errShuttingDown
	case errors.Is(err, realtime.ErrUnavailable):
		s.log.WarnContext(r.Context(), "stream unavailable", "request_id", middleware.GetReqID(r.Context()), "err", err)
		ae = errStreamUnavailable
	case errors.Is(r.Context().Err(), context.DeadlineExceeded):
		// Past the request's deadline (withDeadline), whatever the call
		// that noticed says: a Redis call cut short, a wait given up.
		s.limitStats.deadlines.Add(1)
		s.log.WarnContext(r.Context(), "request past its deadline", "request_id", middleware.GetReqID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "1")
		ae = errTimedOut
	case isUnavailable(err):
		s.log.WarnContext(r.Context(), "redis unavailable", "request_id", middleware.GetReqID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
		ae = errNoRedis
	case redis.HasErrorPrefix(err, "OOM"):
		// Redis at its maxmemory refuses writes, and the scripts that may
		// write (a limit's among them): the operator's to fix, not the
		// request's.
		s.log.WarnContext(r.Context(), "redis refuses writes: out of memory", "request_id", middleware.GetReqID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "30")
		ae = errRedisFull
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client went away; nobody reads an answer
	default:
		s.log.ErrorContext(r.Context(), "internal error", "request_id", middleware.GetReqID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
		ae = errInternal
	}
	ae.write(w)
}

// isUnavailable reports whether err means Redis could not be reached.
func isUnavailable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) ||
		errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded)
}

// humanDuration says d in whole minutes, or seconds under a minute.
func humanDuration(d time.Duration) string {
	if d < time.Minute {
		if s := retryAfter(d); s != "1" {
			return s + " seconds"
		}
		return "1 second"
	}
	m := int(math.Ceil(d.Minutes()))
	if m == 1 {
		return "1 minute"
	}
	return strconv.Itoa(m) + " minutes"
}
