/**
 * The operator's routes: `/healthz` (what runs: version, store, upstreams, ledger), `/readyz` (every
 * readiness probe; 503 with the reasons, secrets removed, when one fails) and `/metrics`
 * (Prometheus).
 *
 * @module
 */
import type { Hono } from 'hono'
import { reasonOf } from '../startup.js'
import type { GatewayAppOptions, GatewayEnv } from './app.js'

/**
 * Registers the health, readiness and metrics routes on `app`.
 *
 * @example
 * ```ts
 * mountHealthRoutes(app, options)
 * ```
 */
export function mountHealthRoutes(app: Hono<GatewayEnv>, options: GatewayAppOptions): void {
  const { metrics } = options
  app.get('/healthz', (c) =>
    c.json({ status: 'ok', ...(options.health ?? {}), ledger: options.ledger }),
  )
  app.get('/readyz', async (c) => {
    const checks: Record<string, 'ok' | 'failed'> = {}
    const reasons: Record<string, string> = {}
    await Promise.all(
      Object.entries(options.readiness ?? {}).map(async ([name, probe]) => {
        try {
          await probe()
          checks[name] = 'ok'
        } catch (error) {
          checks[name] = 'failed'
          reasons[name] = reasonOf(error, options.redact)
        }
      }),
    )
    const ready = Object.values(checks).every((v) => v === 'ok')
    return c.json(ready ? { ready, checks } : { ready, checks, reasons }, ready ? 200 : 503)
  })
  app.get(
    '/metrics',
    async () =>
      new Response(await metrics.registry.metrics(), {
        headers: { 'content-type': metrics.registry.contentType },
      }),
  )
}
