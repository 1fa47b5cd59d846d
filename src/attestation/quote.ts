/**
 * Hardware quotes behind an ACI attestation report, behind one pluggable interface: a
 * {@link QuoteVerifier} turns the quote bytes into the measurement, the 64 report-data bytes and
 * the TCB status it vouches for, or says why it cannot. Intel TDX quotes are checked with DCAP
 * collateral by `tdxQuoteVerifier` (`@phala/dcap-qvl`): under Intel's root CA in production, under
 * the simulated enclave's test root in tests — the same code either way.
 *
 * @module
 */

/** The TCB status a quote reports (DCAP's levels). `Revoked` and `Unknown` fail verification. */
export type TcbStatus =
  | 'UpToDate'
  | 'SWHardeningNeeded'
  | 'ConfigurationNeeded'
  | 'ConfigurationAndSWHardeningNeeded'
  | 'OutOfDate'
  | 'OutOfDateConfigurationNeeded'
  | 'Revoked'
  | 'Unknown'

/** What a quote verifier concluded: the quote's claims, or why it was not accepted. */
export type QuoteVerdict =
  | {
      status: 'valid'
      /** The measurement (hex) an allow-list is checked against. */
      measurement: string
      reportData: Uint8Array
      tcbStatus: TcbStatus
      /** The measurement registers behind `measurement` (hex), when the TEE has several. */
      registers?: Readonly<Record<string, string>> | undefined
      /**
       * When known: the verdict holds for every verification time from the one checked up to (not
       * including) this, ms since epoch (the earliest expiry of the collateral it relied on). A
       * verifier that does not state it has its verdict reused for the same verification time only.
       */
      validUntilMs?: number | undefined
    }
  | {
      status: 'invalid'
      reason: string
      /** The TCB status, when that is why the quote was refused. */
      tcbStatus?: TcbStatus | undefined
    }

/** Checks a hardware quote. Implementations must verify the quote's signature chain. */
export type QuoteVerifier = {
  /** The TEE type this verifier accepts, as named in the report (`tee_type`). */
  teeType: string
  /** Verifies a quote; `now` (ms since epoch, default the clock) is when collateral must be valid. */
  verify(quote: Uint8Array, options?: { now?: number | undefined }): Promise<QuoteVerdict>
}
