import { chmodSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PaymentError } from '../errors.js'
import {
  createWalletFile,
  limitsFrom,
  loadSettings,
  loadWallet,
  saveSettings,
  walletPaths,
} from './walletFiles.js'

const home = () => join(mkdtempSync(join(tmpdir(), 'tollgate-home-')), 'tollgate')

describe('wallet files', () => {
  it('create a 0600 key in a 0700 folder, load it back, and never overwrite it silently', async () => {
    const dir = home()
    const { address, file } = await createWalletFile({ home: dir })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(statSync(dir).mode & 0o777).toBe(0o700)
    expect((await loadWallet(dir)).toSuiAddress()).toBe(address)
    await expect(createWalletFile({ home: dir })).rejects.toThrow(/--force/)
    const replaced = await createWalletFile({ home: dir, force: true })
    expect(replaced.address).not.toBe(address)
  })

  it('refuse a key file that others can read, and say how to fix it', async () => {
    const dir = home()
    const { file } = await createWalletFile({ home: dir })
    chmodSync(file, 0o644)
    const error = await loadWallet(dir).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PaymentError)
    expect((error as PaymentError).message).toContain(`chmod 600 ${file}`)
  })

  it('explain a missing wallet', async () => {
    await expect(loadWallet(home())).rejects.toThrow(/tollgate wallet new/)
  })

  it('keep limits in settings, "off" turning one off', async () => {
    const dir = home()
    expect(await loadSettings(dir)).toEqual({})
    await saveSettings({ perTransaction: '5', perDay: 'off' }, dir)
    const settings = await loadSettings(dir)
    expect(limitsFrom(settings, dir)).toEqual({
      file: walletPaths(dir).spending,
      perTransaction: '5',
      perDay: null,
    })
    await expect(saveSettings({ perDay: '1e9' }, dir)).rejects.toThrow()
  })
})
