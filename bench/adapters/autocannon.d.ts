/** The part of autocannon's API the adapter benchmark uses (the package ships no types). */
declare module 'autocannon' {
  type Options = {
    url: string
    method?: string
    connections?: number
    duration?: number
    body?: string
    headers?: Record<string, string>
  }
  type Result = {
    requests: { average: number; total: number }
    errors: number
    timeouts: number
    statusCodeStats?: Record<string, { count: number }>
  }
  function autocannon(options: Options): Promise<Result>
  export default autocannon
}
