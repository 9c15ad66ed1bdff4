// Package bloblease is the Azure Blob Storage backend for fxelection: one
// blob per election, guarded by the service's native blob lease. Azure
// expires the lease by its own clock, so this is a server-authoritative
// backend: no node ever compares its clock with another's.
//
//	b, err := bloblease.New(client, bloblease.Options{Container: "leases"}) // or bloblease.Module in fx
//
// # Summary
//
//   - Expiry: server-authoritative, by Azure's clock: the native blob
//     lease, of LeaseDuration rounded up to whole seconds, which Azure
//     limits to 15s–60s (Config.LeaseDuration must lie in that range).
//   - Fencing term: the larger of the stored term plus one and the
//     acquiring candidate's clock in microseconds, kept in the blob's
//     metadata across renewals, release and expiry (see Guarantees and
//     requirements).
//   - Push wake-up: none; followers learn of a release at their next retry,
//     within 1.2 × RetryPeriod.
//   - Failover: Azure ends a crashed leader's lease ceil(LeaseDuration)
//     (whole seconds, rounded up) after its last renewal reached Azure, and
//     a follower takes it at its next retry: within ceil(LeaseDuration) +
//     1.2 × RetryPeriod of that renewal, plus the few requests of a poll and
//     an acquisition.
//   - Timers: Acquire and Get wait, on a timer, for a record that names
//     the active lease's holder (see Guarantees and requirements); the
//     Backend has no goroutine of its own.
//   - Hand-over: Backend implements backendkit.Transferer (Transfer, which
//     Elector.ResignTo uses): the successor's record, with a new term, is
//     written under the leader's Azure lease, and that lease is then given
//     the successor's lease id (Change Lease), so no other candidate can
//     take it in between; readers that land between the two requests wait
//     for the record and the lease to agree, as they do during Acquire.
//   - What it cannot promise: Azure cannot tell two live processes with one
//     identity apart (they present one lease id; see the fixed identities
//     paragraph); a term can repeat only after the record is lost and the
//     next candidate's clock lags; Azurite, unlike Azure, may lose its last
//     writes when it crashes.
//
// # Layout
//
// Each election is one block blob, <prefix><escaped election> (the prefix
// defaults to "fxelection/", the name is escaped with url.PathEscape), in a
// container the application creates. The blob's content is empty. Its
// metadata value "fxelection" (MetadataKey) holds the lease record — holder,
// the incarnation that acquired the term (AcquireRequest.Incarnation; absent
// when the request named none), term, the holder's metadata, duration,
// acquisition time — encoded with
// backendkit.MarshalRecord and then base64, since metadata values must be
// HTTP-header safe. Azure limits all of a blob's metadata to 8 KiB. Where
// that JSON record would not fit (JSON doubles every '"' and '\' and adds
// six bytes to each metadata entry: 4 KiB of them, or thousands of tiny
// entries, would not fit), the value is instead base64 of a compact
// binary record (its first byte 2; each text stored once as its bytes,
// metadata entries grouped by the lengths of their keys and values), which
// holds every Config the core accepts — up to
// backendkit.MaxMetadataBytes (4096) of Metadata with the longest Name and
// Identity — within the 8 KiB. Versions before it read only the JSON
// record, which is still written whenever it fits, so during a rolling
// upgrade they read every record they could have written themselves.
//
// Lease.Version is the Azure lease id, followed (in leases from Acquire and
// Renew) by ";" and the blob's ETag the holder last saw. The lease id is
// derived from the identity (LeaseID: a version-5-style UUID of
// SHA-1("fxelection:"+identity)), so a holder that restarts with the same
// identity presents the same lease id and gets its lease back at once —
// as a new incarnation, with a strictly higher term (see Acquire). The
// record's holder and term, not the lease id, tell one identity's
// incarnations apart; the ETag tells the acquisitions of one lease id apart
// (see Release).
//
// # Operations
//
//   - Acquire reads the blob's properties (creating the empty blob with
//     If-None-Match: * when it does not exist). If the blob's lease is
//     active and the record names someone else, that holder is verified
//     with a read conditioned on the holder's lease id, and a
//     *backendkit.HeldError carrying its record is returned. Otherwise
//     (lease available, expired or broken) it first writes the new record
//     into the unleased blob with If-Match on the ETag just read, then
//     acquires the Azure lease with the caller's lease id, conditioned with
//     If-Match on the ETag of that write; so a leased blob's record always
//     names its leaseholder and current term. When the record already names
//     the caller's identity under an active lease (the same lease id) — a
//     new incarnation, or the same leadership retrying after a lost reply —
//     it renews that lease with If-Match on the ETag read (Azure refuses
//     once it was released or taken since), writes its record under it,
//     and then acquires the lease for its duration with If-Match on the
//     ETag of that write; so a lease released meanwhile never becomes
//     active again under the record of the leadership that released it. A
//     refused condition means another incarnation wrote or the lease ended
//     meanwhile: Acquire reads and decides again. Term: unchanged only if
//     the lease was active and req.Continues the record (same identity and, when the
//     request names one, the same incarnation: a retry after a lost
//     reply); otherwise backendkit.NextTerm(stored term) — the larger of
//     the stored term + 1 and the candidate's clock in microseconds since
//     the Unix epoch. That includes a new incarnation of the live holder (a
//     restarted process with a fixed identity): it takes the lease at once,
//     without waiting for expiry, and its record write gives the record the
//     higher term, so from that write on the predecessor's Renew fails
//     with backendkit.ErrLeaseLost and its Release frees nothing. It also
//     includes the caller's own lease after it expired or was released;
//     for a new, deleted or foreign blob (no valid record) NextTerm(0), the
//     clock alone. A request naming no incarnation keeps the term of a
//     record that names one (and the record then names none).
//   - Renew renews the Azure lease and then reads the record under it: it
//     fails with backendkit.ErrLeaseLost when Azure refuses the renewal
//     (another lease id holds it, or it was released or broken) or the
//     record no longer has the caller's holder and term. Like Azure, it
//     renews a lease that expired if nobody leased or changed the blob
//     since.
//   - Release reads the record under the caller's lease id and, if it still
//     has the caller's holder and term and the blob still has the ETag in
//     lease.Version, releases the Azure lease with If-Match on that ETag.
//     An earlier incarnation's delayed Release frees nothing: the record
//     has its successor's higher term. A re-acquisition rewrites the record
//     (new ETag), so a delayed Release from the same incarnation's earlier
//     acquisition, which shares its lease id and term, frees nothing
//     either. Renew returns the ETag it read, so the holder's own Release
//     matches even after its own delayed Acquire (a retry whose reply was
//     lost) rewrote the record. A Version that is the lease id alone (from
//     Get, or built by hand) is matched on lease id, holder and term only.
//     The record stays, so the next holder's term is higher. A lease that
//     is no longer the caller's gives nil.
//   - Get reports the holder of the active lease (verified as in Acquire),
//     or backendkit.ErrNoLease when the blob is missing or its lease is not
//     active. Azure does not report a lease's remaining time, so
//     Lease.ExpiresAt is zero from Get and in HeldError; from Acquire and
//     Renew it is the response's Date (1 s resolution) plus the duration,
//     for display only.
//
// Each operation is a few requests: a follower's poll is two reads, a
// leader's renewal one lease request and one read, an acquisition a read,
// a lease request and a metadata write.
//
// # Guarantees and requirements
//
//   - Mutual exclusion is Azure's: only one lease id can hold a blob's lease,
//     and only the holder can write the blob's metadata, so the record under
//     an active lease is always written by that lease's holder. The lease is
//     taken with If-Match on the ETag the decision was based on, so no
//     record change slips in between.
//   - Lease durations: Azure grants 15s to 60s. AcquireRequest.Duration is
//     rounded up to whole seconds and must lie in that range, else Acquire
//     fails with an error matching ErrDuration (the elector reports it as a
//     store failure). With this backend Config.LeaseDuration must be 15s–60s
//     (the default 15s fits).
//   - Terms strictly increase on every change of holder, on every new
//     incarnation of the holder, and after every release or expiry, and
//     never wrap: after a record at backendkit.MaxTerm Acquire fails with
//     an error matching backendkit.ErrTermExhausted and writes nothing.
//     Every record write is a compare-and-swap on the ETag its term was
//     computed from, so two incarnations of one identity acquiring at once
//     never write the same term and the record never goes back to a lower
//     one. The term stays the same only when the holder's own incarnation
//     (or a request naming none) re-acquires its lease while Azure still
//     reports it active. The one window: if that lease expires between
//     Acquire's read and its lease request and nobody else acquires it in
//     between, the caller keeps its term — no other candidate held a term
//     meanwhile, so fencing is unaffected.
//   - Fixed identities: a restarted process with the same identity leads at
//     once with a higher term, and a predecessor that was only paused (a
//     SIGSTOP, a frozen VM, a partition) is fenced off: every guard that
//     saw the new term refuses its writes, its Renew fails with
//     ErrLeaseLost from the successor's record write on, and its elector
//     steps down at that Renew or, cut off from Azure, within RenewDeadline
//     of its last successful one. What Azure cannot do is tell the two
//     apart: they present one lease id, so until then
//     the predecessor's lease requests still extend the shared lease, and a
//     predecessor that resumes and campaigns again (a new incarnation after
//     stepping down) takes the lease back, again with a higher term. Two
//     live candidates with one identity therefore keep fencing safe but
//     take the lease from each other in turn: never run them on purpose.
//     A request that names no incarnation (the Elector's hand-over hint,
//     or a caller of the Backend without an Elector) keeps the holder's
//     term, and gets no such fencing.
//   - Terms also rise when the blob is deleted out of band or its record
//     replaced by something undecodable: with no valid record to read, the
//     next term is the candidate's clock in microseconds, above every term
//     handed out earlier (each was at most the microsecond it was issued
//     at, unless many holder changes came within microseconds). What can
//     still make a term repeat or go back: only a deleted or destroyed
//     record, and then only a candidate whose wall clock lags by more than
//     the time since the lost term was handed out, or whose create of the
//     missing blob (decided before) was still in flight while another
//     candidate created the blob and it was deleted again. With clocks kept by NTP
//     the gap is the clock error, usually milliseconds; a record that
//     survives keeps terms rising whatever the clocks say.
//   - Acquire and Get verify the named holder against the active lease and,
//     if it does not match, poll (5ms doubling to 100ms) for up to 5s while
//     the blob does not change (each change starts the wait again, ctx
//     bounds it). If no record names the
//     active lease by then (a program other than fxelection leased the
//     blob) they return an error matching backendkit.ErrInvalidRecord until
//     that lease expires.
//   - There is no push wake-up: followers learn of a release at their next
//     retry (the Backend does not implement backendkit.Notifier).
//
// # Foreign blobs and hostile records
//
// Everything read from the container is validated before the elector sees
// it. A blob whose "fxelection" metadata is not standard base64 of a valid
// compact record or of valid
// UTF-8, or holds a record that backendkit.UnmarshalRecord rejects (holder,
// election or metadata not printable UTF-8, term outside [1, MaxTerm],
// duration not in (0, backendkit.MaxRecordDuration]), names another
// election, or has an acquired_at that cannot be written back, gives an
// error matching backendkit.ErrInvalidRecord from Acquire and Get while its
// lease is active (quoting no stored value unescaped), and is never taken
// over before Azure expires or breaks that lease: expiry is Azure's, so a
// record's duration never decides a takeover. Once it is not leased,
// Acquire takes it over at a clock-seeded term (see above), as it does
// after the blob was deleted.
//
// # Errors
//
// Every error that leaves the Backend, and the config module's,
// passes through backendkit.RedactError: URL userinfo and query strings
// (the SDK's network errors carry the full request URL, with a SAS's sig=)
// and key=value secrets are removed, and for the config module's backends the
// configured account key and the connection string's AccountKey and
// SharedAccessSignature (and its signature in every escaping) too. A
// Backend from New knows no secrets of the client, but a SAS travels in the
// URL's query string, which is always removed. Errors still match the
// contract's sentinels with errors.Is.
//
// # Clients and emulator
//
// New uses the application's *azblob.Client and does no I/O; the container
// must exist. The SDK's retry policy (ClientOptions.Retry) applies to
// every request: keep its total time well below RenewDeadline. The
// configuration-document module fxelection.backends.blob (ConfigModule)
// builds a client of its own, with a short retry policy, from a connection
// string or an account URL, name and key (see Configuration).
//
// The tests run against Azurite 3.35 in strict mode (no --loose), which
// supports everything used here: conditional lease requests, lease-id
// conditioned reads and writes, and caller-proposed lease ids. Azurite, like
// Azure, allows renewing an expired lease nobody took.
//
// # Configuration
//
// The settings of the module fxelection.backends.blob (ConfigModule): a
// connection string, or an account URL, name and key; then
//
//   - connection_string (a secret): an Azure Storage connection string (it
//     embeds the account key or a SAS).
//   - account_url, account_name, account_key (a secret): the service URL
//     (https://ACCOUNT.blob.core.windows.net/), the account's name and its
//     shared key, all three instead of connection_string.
//   - container (required): Options.Container, an existing container.
//   - prefix: Options.Prefix (default "fxelection/").
package bloblease
