// Follows one session: applies its `agent/event` notifications in `seq` order, and rebuilds
// from `agent/getState` when it starts following, after a reconnect, and whenever it sees a
// gap in `seq` (protocol.md section 3: "A client that sees a jump has missed events") or a
// `rewind` event that changed the conversation.
import type { Disposable, TillerClient } from "./client";
import { applyEvent, viewFromState, type SessionView } from "./reducer";
import type { AgentEventParams, SessionState } from "./types";

export interface SyncListener {
  /** The view was rebuilt from `state` (the first sync, a resync after a gap, a reconnect). */
  onReset?(view: SessionView, state: SessionState): void;
  /** One event was applied to the view, in order, without a gap. */
  onEvent?(view: SessionView, notification: AgentEventParams): void;
  /** getState failed (the server went away, the session is unknown...). */
  onSyncError?(error: unknown): void;
}

export class SessionSync implements Disposable {
  view: SessionView | null = null;
  /** How many times the view was rebuilt from getState (1 for the initial sync). */
  resets = 0;
  gapsSeen = 0;
  private buffer: AgentEventParams[] = [];
  private syncing: Promise<void> | null = null;
  private subscription: Disposable;
  private disposed = false;

  constructor(
    private client: TillerClient,
    readonly sessionId: string,
    private listener: SyncListener = {},
  ) {
    this.subscription = client.onEvent((params) => this.handle(params));
  }

  /** Starts (or restarts) from `agent/getState`; resolves once the view is rebuilt. */
  resync(): Promise<void> {
    // Deferred by a microtask, so `syncing` is set before anything can settle.
    this.syncing ??= Promise.resolve()
      .then(() => this.fetchState())
      .finally(() => {
        this.syncing = null;
        this.drain();
      });
    return this.syncing;
  }

  private async fetchState(): Promise<void> {
    try {
      const state = await this.client.getState(this.sessionId);
      if (this.disposed) return;
      this.view = viewFromState(state);
      this.resets++;
      this.listener.onReset?.(this.view, state);
    } catch (error) {
      this.buffer = []; // nothing to apply them to; the next resync brings them
      if (!this.disposed) this.listener.onSyncError?.(error);
    }
  }

  /** Feeds one notification (the constructor subscribes this to the client's events). */
  handle(params: AgentEventParams): void {
    if (this.disposed || params.sessionId !== this.sessionId) return;
    // Without a view and no getState on its way there is nothing to apply an event to: the
    // next resync() brings the state (events before it are part of it).
    if (!this.view && !this.syncing) return;
    this.buffer.push(params);
    if (!this.syncing) this.drain();
  }

  private drain(): void {
    const view = this.view;
    if (!view) return;
    this.buffer.sort((a, b) => a.seq - b.seq);
    while (this.buffer.length) {
      const next = this.buffer[0];
      if (next.seq <= view.seq) {
        this.buffer.shift(); // already part of the state (sent before getState answered)
        continue;
      }
      if (next.seq !== view.seq + 1) {
        this.gapsSeen++;
        void this.resync();
        return;
      }
      this.buffer.shift();
      applyEvent(view, next.event);
      view.seq = next.seq;
      this.listener.onEvent?.(view, next);
      // A rewind of the conversation replaced the messages: events do not carry them, getState does.
      if (next.event.type === "rewind" && next.event.restore !== "files") {
        void this.resync();
        return;
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    this.subscription.dispose();
    this.buffer = [];
  }
}
