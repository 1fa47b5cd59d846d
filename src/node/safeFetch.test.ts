import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { isInternalAddress } from './index.js'

describe('isInternalAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['100.100.100.200', 'carrier-grade NAT (Alibaba metadata)'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', '"this" network'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.170', 'IETF protocol assignments'],
    ['198.18.0.1', 'benchmarking'],
    ['192.0.2.1', 'documentation'],
    ['2130706433', 'decimal 127.0.0.1'],
    ['0x7f.0.0.1', 'hex 127.0.0.1'],
    ['0177.0.0.1', 'octal 127.0.0.1'],
    ['017700000001', 'octal long 127.0.0.1'],
    ['::1', 'IPv6 loopback'],
    ['[::1]', 'bracketed IPv6 loopback'],
    ['::', 'IPv6 unspecified'],
    ['fe80::1', 'IPv6 link-local'],
    ['fe80::1%eth0', 'IPv6 link-local with a zone'],
    ['fd00::1', 'unique-local'],
    ['fc12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'AWS metadata over IPv6'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'IPv6 multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata'],
    ['::ffff:0:7f00:1', 'SIIT loopback'],
    ['::7f00:1', 'IPv4-compatible loopback'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of metadata'],
    ['64:ff9b::10.0.0.1', 'NAT64 of private'],
    ['64:ff9b:1::808:808', 'local-use NAT64'],
    ['2002:7f00:1::', '6to4 of loopback'],
    ['2002:a00:1::1', '6to4 of private'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['not-an-ip', 'not an address'],
    ['', 'empty'],
    ['1.2.3.4.5', 'not an address'],
  ])('refuses %s (%s)', (address) => {
    expect(isInternalAddress(address)).toBe(true)
  })

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808', // NAT64 of a public address
    '2002:808:808::1', // 6to4 of a public address
  ])('allows the public address %s', (address) => {
    expect(isInternalAddress(address)).toBe(false)
  })

  it('judges every 10.x, 127.x, 169.254.x address internal in any IPv6 wrapping', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), (b, c) => {
        for (const a of [10, 127]) {
          expect(isInternalAddress(`${a}.${b}.${c}.1`)).toBe(true)
          const hi = ((a << 8) | b).toString(16)
          const lo = ((c << 8) | 1).toString(16)
          for (const wrapped of [
            `::ffff:${hi}:${lo}`,
            `64:ff9b::${hi}:${lo}`,
            `2002:${hi}:${lo}::`,
          ]) {
            expect(isInternalAddress(wrapped)).toBe(true)
          }
        }
        expect(isInternalAddress(`169.254.${b}.${c}`)).toBe(true)
        expect(isInternalAddress(`::ffff:10.${b}.${c}.1`)).toBe(true)
      }),
      { numRuns: 200 },
    )
  })

  // A property run, not a timing test: its 100 cases took 5.9 s once on two loaded cores.
  it('never throws on any text', { timeout: 60_000 }, () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (text) => {
        expect(typeof isInternalAddress(text)).toBe('boolean')
      }),
    )
  })
})
