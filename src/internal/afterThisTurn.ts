/**
 * Work moved out of the current turn of the event loop, to run once the microtasks and I/O
 * callbacks now due have run: what a request path defers so that the request it is about to send,
 * or the answer it is about to give, goes first.
 *
 * @module
 * @internal
 */

/** Runs `task` after this turn: `setImmediate` where the runtime has it (Node, Bun), else a zero timeout. */
export const afterThisTurn: (task: () => unknown) => void =
  typeof globalThis.setImmediate === 'function'
    ? (task) => void globalThis.setImmediate(task)
    : (task) => void setTimeout(task, 0)
