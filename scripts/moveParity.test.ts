import type { ClientWithCoreApi } from '@mysten/sui/client'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { Escrow, type Ledger, type MoveCallArgument, Session } from 'tollgate'
import { registerAgent } from 'tollgate/conformance'
import { moduleAborts, moduleFunctions, moduleStructs, passedParameters } from 'tollgate/testing'
import { describe, expect, it } from 'vitest'
import { compareInterfaces, createMoveReader, type MoveInterface } from './moveParity.js'

const reader = await createMoveReader()
const declared: MoveInterface = {
  functions: [...moduleFunctions],
  structs: [...moduleStructs],
  aborts: [...moduleAborts],
}

describe('the Move package and the emulator', () => {
  it('declare the same public functions, structs and abort codes', async () => {
    const move = reader.readPackage('move/tollgate')
    expect(compareInterfaces(declared, move)).toEqual([])
    // The comparison saw every module: nothing agrees by both sides being empty.
    expect(new Set(move.functions.map((f) => f.module))).toEqual(
      new Set(['agent_registry', 'receipt_anchor', 'escrow', 'channel']),
    )
    expect(move.aborts).toHaveLength(moduleAborts.length)
  })

  it('reports each difference of the deliberate mismatch fixture', async () => {
    const move = reader.readPackage('move/fixtures/mismatch')
    expect(compareInterfaces(declared, move, ['receipt_anchor'])).toEqual([
      'function receipt_anchor::anchor_receipt: parameters (receipt_id: String, wire_hash: String, workload_id: String, served_at_ms: u64, gateway_receipt_hash: String, clock: &Clock, ctx: &TxContext) ≠ (wire_hash: String, receipt_id: String, workload_id: String, served_at_ms: u64, gateway_receipt_hash: String, clock: &Clock, ctx: &TxContext)',
      'struct receipt_anchor::ReceiptAnchored: fields (receipt_id: String, wire_hash: String, workload_id: String, served_at_ms: u64, gateway_receipt_hash: String, anchored_at_ms: u64, anchored_by: address) ≠ (receipt_id: String, wire_hash: String, workload_id: String, served_at_ms: u64, gateway_receipt_hash: String, anchored_at_ms: u64, anchorer: address)',
      'abort receipt_anchor::ETOO_LONG: code 1 ≠ 2',
    ])
  })

  it('reports what one side has and the other lacks', async () => {
    const move = reader.readPackage('move/tollgate')
    const withoutSetFee: MoveInterface = {
      ...move,
      functions: move.functions.filter((f) => f.name !== 'set_fee'),
    }
    expect(compareInterfaces(declared, withoutSetFee)).toEqual([
      'function escrow::set_fee: declared, not in the Move source',
    ])
    expect(compareInterfaces(withoutSetFee, declared)).toEqual([
      'function escrow::set_fee: in the Move source, not declared',
    ])
  })
})

// The escrow builders, run against a stub client: each move call's arguments, by kind.
const coin = (id: string, balance: string) => ({
  objectId: normalizeSuiAddress(id),
  version: '1',
  digest: '11111111111111111111111111111111',
  balance,
})
const stubClient = {
  core: {
    getReferenceGasPrice: async () => ({ referenceGasPrice: '1000' }),
    listCoins: async ({ coinType }: { coinType: string }) => ({
      objects: coinType.endsWith('::sui::SUI')
        ? [coin('0xa1', '1000000000')]
        : [coin('0xb1', '5000')],
    }),
  },
} as unknown as ClientWithCoreApi

const pkg = normalizeSuiAddress('0x70116a7e')
const job = { id: normalizeSuiAddress('0xa0b'), initialSharedVersion: '7' }
const base = { client: stubClient, package: pkg, sender: normalizeSuiAddress('0xbeef') }

/** What kind of argument each parameter type takes in a transaction. */
function expectedKind(type: string): string {
  if (type === '&Clock') return 'clock'
  if (type.startsWith('&')) return 'object'
  if (type.startsWith('Coin<') || type.startsWith('Balance<')) return 'result'
  return 'pure'
}

function argumentKinds(tx: Transaction): { target: string; kinds: string[] } {
  const data = tx.getData()
  const call = data.commands.find(
    (c) => c.MoveCall && normalizeSuiAddress(c.MoveCall.package) === pkg,
  )?.MoveCall
  if (!call) throw new Error('no call of the package')
  const kinds = call.arguments.map((argument) => {
    if (argument.$kind !== 'Input') return 'result'
    const input = data.inputs[argument.Input]
    if (input?.Pure) return 'pure'
    const object = input?.Object?.SharedObject ?? input?.Object?.ImmOrOwnedObject
    if (!object) return 'unknown'
    return normalizeSuiAddress(object.objectId) === normalizeSuiAddress('0x6') ? 'clock' : 'object'
  })
  return { target: `${call.module}::${call.function}`, kinds }
}

describe('the escrow transaction builders', () => {
  it('pass the arguments the declared signatures name, in order and by kind', async () => {
    const built = [
      await Escrow.buildFund({
        ...base,
        configInitialSharedVersion: '3',
        terms: {
          package: pkg,
          config: normalizeSuiAddress('0xc0'),
          seller: normalizeSuiAddress('0x5e'),
          amount: '1000',
          asset: `${normalizeSuiAddress('0xdc')}::usdc::USDC`,
          feeBps: 500,
          deliverByMs: 1_700_000_000_000,
          reviewMs: 3_600_000,
          terms: '07'.repeat(32),
        },
      }),
      await Escrow.buildDeliver({ ...base, job, deliveryHash: '07'.repeat(32) }),
      await Escrow.buildRelease({ ...base, job }),
      await Escrow.buildReject({ ...base, job, reason: 'no' }),
      await Escrow.buildRefund({ ...base, job }),
      await Escrow.buildSetFee({
        ...base,
        adminCap: {
          objectId: normalizeSuiAddress('0xcab'),
          version: '1',
          digest: coin('0x1', '0').digest,
        },
        config: normalizeSuiAddress('0xc0'),
        configInitialSharedVersion: '3',
        feeBps: 250,
      }),
    ].map(argumentKinds)
    const escrowFunctions = moduleFunctions.filter((f) => f.module === 'escrow')
    expect(built.map((b) => b.target).sort()).toEqual(
      escrowFunctions.map((f) => `escrow::${f.name}`).sort(),
    )
    for (const { target, kinds } of built) {
      const signature = escrowFunctions.find((f) => `escrow::${f.name}` === target)
      if (!signature) throw new Error(`no declared ${target}`)
      expect({ target, kinds }).toEqual({
        target,
        kinds: passedParameters(signature).map((p) => expectedKind(p.type)),
      })
    }
  })
})

describe('the session channel transaction builders', () => {
  it('pass the arguments the declared signatures name, in order and by kind', async () => {
    const usdc = `${normalizeSuiAddress('0xdc')}::usdc::USDC`
    const channel = { ...job, coinType: usdc }
    const voucher = {
      channelId: channel.id,
      cumulativeAmount: 900n,
      signature: new Uint8Array(64).fill(7),
    }
    const built = [
      await Session.buildOpen({
        ...base,
        registry: normalizeSuiAddress('0x7e9'),
        registryInitialSharedVersion: '3',
        coinType: usdc,
        deposit: 1000n,
        payee: normalizeSuiAddress('0x5e'),
        salt: new Uint8Array(32).fill(1),
        signerPublicKey: new Uint8Array(32).fill(2),
        graceMs: 900_000n,
      }),
      await Session.buildTopUp({ ...base, channel, amount: 500n }),
      await Session.buildSettle({ ...base, channel, voucher, capture: 800n }),
      await Session.buildClose({ ...base, channel, voucher, capture: 900n }),
      await Session.buildRequestClose({ ...base, channel }),
      await Session.buildWithdraw({ ...base, channel }),
    ].map(argumentKinds)
    const channelFunctions = moduleFunctions.filter((f) => f.module === 'channel')
    expect(built.map((b) => b.target).sort()).toEqual(
      channelFunctions.map((f) => `channel::${f.name}`).sort(),
    )
    for (const { target, kinds } of built) {
      const signature = channelFunctions.find((f) => `channel::${f.name}` === target)
      if (!signature) throw new Error(`no declared ${target}`)
      expect({ target, kinds }).toEqual({
        target,
        kinds: passedParameters(signature).map((p) => expectedKind(p.type)),
      })
    }
  })
})

describe('agent registration', () => {
  it('passes the arguments agent_registry::register declares, by kind', async () => {
    const calls: { target: string; arguments: readonly MoveCallArgument[] }[] = []
    const ledger = {
      buildMoveCall: async (request: {
        target: string
        arguments: readonly MoveCallArgument[]
      }) => {
        calls.push(request)
        throw new Error('stop here: only the request is looked at')
      },
    } as unknown as Ledger
    await registerAgent({ ledger, signer: Ed25519Keypair.generate(), name: 'scout' })
    expect(calls.map((c) => c.target)).toEqual([`${pkg}::agent_registry::register`])
    const register = moduleFunctions.find((f) => f.name === 'register')
    if (!register) throw new Error('no declared register')
    expect(calls[0]?.arguments.map((a) => ('clock' in a ? 'clock' : 'pure'))).toEqual(
      passedParameters(register).map((p) => expectedKind(p.type)),
    )
  })
})
