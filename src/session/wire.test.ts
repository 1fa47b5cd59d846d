import { describe, expect, it } from 'vitest'
import {
  needVoucherSchema,
  sessionAmountSchema,
  sessionPayloadSchema,
  sessionProblemType,
  sessionReceiptSchema,
  sessionRequestSchema,
} from './wire.js'

const address = (c: string) => `0x${c.repeat(64)}`
const usdc = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const descriptor = {
  payer: address('a'),
  payee: address('b'),
  operator: address('0'),
  coinType: usdc,
  salt: `0x${'11'.repeat(32)}`,
  signerPublicKey: `0x${'22'.repeat(32)}`,
  gracePeriodMs: 900_000,
}
const voucher = {
  channelId: address('c'),
  descriptor,
  cumulativeAmount: '40000',
  signature: `0x${'33'.repeat(64)}`,
}

describe('session wire', () => {
  it('reads a session request, and refuses a zero price or a short grace period', () => {
    const request = {
      amount: '25',
      unitType: 'token',
      suggestedDeposit: '1000000',
      currency: usdc,
      recipient: address('b'),
      methodDetails: {
        network: 'mainnet',
        package: address('d'),
        registry: address('e'),
        gracePeriodMs: 900_000,
      },
    }
    expect(sessionRequestSchema.parse(request)).toEqual(request)
    expect(sessionRequestSchema.safeParse({ ...request, amount: '0' }).success).toBe(false)
    expect(
      sessionRequestSchema.safeParse({
        ...request,
        methodDetails: { ...request.methodDetails, gracePeriodMs: 60_000 },
      }).success,
    ).toBe(false)
  })

  it('reads each action, and refuses a payload that mixes or lacks its fields', () => {
    expect(sessionPayloadSchema.parse({ action: 'voucher', ...voucher }).action).toBe('voucher')
    expect(sessionPayloadSchema.parse({ action: 'close', ...voucher }).action).toBe('close')
    const open = {
      action: 'open',
      ...voucher,
      type: 'digest',
      digest: '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
    }
    expect(sessionPayloadSchema.parse(open).action).toBe('open')
    const topUp = {
      action: 'topUp',
      channelId: voucher.channelId,
      descriptor,
      additionalDeposit: '500000',
      type: 'transaction',
      transaction: 'AAAA',
      transactionSignatures: ['AAAA'],
    }
    expect(sessionPayloadSchema.parse(topUp).action).toBe('topUp')
    expect(
      sessionPayloadSchema.safeParse({ action: 'voucher', ...voucher, signature: '0x12' }).success,
    ).toBe(false)
    expect(sessionPayloadSchema.safeParse({ action: 'open', ...voucher }).success).toBe(false)
    expect(sessionPayloadSchema.safeParse({ action: 'settle', ...voucher }).success).toBe(false)
    expect(
      sessionPayloadSchema.safeParse({ ...topUp, transactionSignatures: Array(5).fill('AAAA') })
        .success,
    ).toBe(false)
  })

  it('bounds amounts to 2^63 − 1 and refuses leading zeros', () => {
    expect(sessionAmountSchema.safeParse('9223372036854775807').success).toBe(true)
    expect(sessionAmountSchema.safeParse('9223372036854775808').success).toBe(false)
    expect(sessionAmountSchema.safeParse('01').success).toBe(false)
    expect(sessionAmountSchema.safeParse('-1').success).toBe(false)
  })

  it('reads receipts and need-voucher events, and names problem types as mppx does', () => {
    const receipt = {
      method: 'sui',
      intent: 'session',
      status: 'success',
      timestamp: '2030-01-01T00:00:00.000Z',
      reference: address('c'),
      challengeId: 'abc',
      channelId: address('c'),
      acceptedCumulative: '40000',
      spent: '25000',
      units: '1000',
    }
    expect(sessionReceiptSchema.parse(receipt)).toEqual(receipt)
    expect(
      needVoucherSchema.parse({
        channelId: address('c'),
        requiredCumulative: '40025',
        acceptedCumulative: '40000',
        deposit: '1000000',
      }).requiredCumulative,
    ).toBe('40025')
    expect(sessionProblemType('insufficient-balance')).toBe(
      'https://paymentauth.org/problems/session/insufficient-balance',
    )
  })
})
