import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isInternalAddress } from './probe.js'

describe('isInternalAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.100.100.200', // carrier-grade NAT (Alibaba metadata)
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00::1',
    'fc12:3456::1',
    'fd00:ec2::254', // AWS metadata over IPv6
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe', // 169.254.169.254 mapped
    'not-an-ip',
  ])('refuses %s', (address) => {
    expect(isInternalAddress(address)).toBe(true)
  })

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'allows the public address %s',
    (address) => {
      expect(isInternalAddress(address)).toBe(false)
    },
  )

  it('judges every 10.x, 127.x and 169.254.x address internal, and never throws on any text', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (b, c) => {
        for (const a of ['10', '127']) expect(isInternalAddress(`${a}.${b}.${c}.1`)).toBe(true)
        expect(isInternalAddress(`169.254.${b}.${c}`)).toBe(true)
        expect(isInternalAddress(`::ffff:10.${b}.${c}.1`)).toBe(true)
      }),
      { numRuns: 200 },
    )
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (text) => {
        expect(typeof isInternalAddress(text)).toBe('boolean')
      }),
    )
  })
})
