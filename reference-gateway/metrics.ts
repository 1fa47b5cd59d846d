/**
 * Prometheus metrics of the gateway (prom-client), on a registry of its own so several gateways can
 * live in one process (tests). Served at `GET /metrics`.
 *
 * @module
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { SellerEvent } from 'tollgate'
import type { UpstreamEvent } from './upstreams/upstream.js'

/** The gateway's metrics. */
export type GatewayMetrics = {
  registry: Registry
  /** Counts a finished HTTP request by route pattern (never the raw path) and status. */
  request(route: string, method: string, status: number, seconds: number): void
  /** Feeds payment and refund events. */
  payment(event: SellerEvent): void
  /** Time from the request's arrival to a settled payment (validation + settlement). */
  settlement(seconds: number): void
  /** Feeds upstream attempts. */
  upstream(event: UpstreamEvent): void
}

/** Options of {@link createMetrics}. */
export type MetricsOptions = {
  /** Also collect Node process metrics (CPU, memory, event loop). Default true. */
  processMetrics?: boolean | undefined
}

/**
 * Creates the metrics.
 *
 * @example
 * ```ts
 * const metrics = createMetrics()
 * app.get('/metrics', async () => new Response(await metrics.registry.metrics()))
 * ```
 */
export function createMetrics(options: MetricsOptions = {}): GatewayMetrics {
  const registry = new Registry()
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry })
  const requests = new Counter({
    name: 'gateway_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  })
  const durations = new Histogram({
    name: 'gateway_http_request_duration_seconds',
    help: 'Time to the response head, by route',
    labelNames: ['route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  })
  const settled = new Counter({
    name: 'gateway_payments_settled_total',
    help: 'Payments settled, by dialect',
    labelNames: ['dialect'] as const,
    registers: [registry],
  })
  const rejected = new Counter({
    name: 'gateway_payments_rejected_total',
    help: 'Payments rejected, by error code',
    labelNames: ['code'] as const,
    registers: [registry],
  })
  const refundsDue = new Counter({
    name: 'gateway_refunds_due_total',
    help: 'Paid calls that failed and are owed a refund',
    registers: [registry],
  })
  const refundsPaid = new Counter({
    name: 'gateway_refunds_paid_total',
    help: 'Refunds paid back to buyers',
    registers: [registry],
  })
  const refundsFailed = new Counter({
    name: 'gateway_refunds_failed_total',
    help: 'Refund attempts that failed (retried later)',
    registers: [registry],
  })
  const settlement = new Histogram({
    name: 'gateway_settlement_duration_seconds',
    help: 'From request arrival to a settled payment',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.4, 0.5, 0.75, 1, 2, 5, 15],
    registers: [registry],
  })
  const upstream = new Histogram({
    name: 'gateway_upstream_duration_seconds',
    help: 'Upstream attempts by family, operation and outcome (HTTP status or error kind)',
    labelNames: ['family', 'operation', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  })
  return {
    registry,
    request(route, method, status, seconds) {
      requests.inc({ route, method, status: String(status) })
      durations.observe({ route }, seconds)
    },
    payment(event) {
      switch (event.type) {
        case 'settled':
          settled.inc({ dialect: event.payment.dialect })
          return
        case 'rejected':
          rejected.inc({ code: event.code })
          return
        case 'refund_due':
          refundsDue.inc()
          return
        case 'refunded':
          refundsPaid.inc()
          return
        case 'refund_failed':
          refundsFailed.inc()
          return
        default:
          return
      }
    },
    settlement: (seconds) => settlement.observe(seconds),
    upstream(event) {
      upstream.observe(
        { family: event.family, operation: event.operation, outcome: String(event.outcome) },
        event.ms / 1000,
      )
    },
  }
}
