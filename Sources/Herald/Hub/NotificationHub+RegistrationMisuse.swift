extension NotificationHub {
    /// Refuses a registration whose family can never match, if `Family` is such a type: reports
    /// the ``FamilyMismatch`` and returns `true`.
    func refusesFamily<Family>(_ type: Family.Type, fileID: StaticString, line: UInt) -> Bool {
        guard let mismatch = FamilyMismatch.of(type) else { return false }
        let misuse = RegistrationMisuse(mismatch: mismatch, fileID: "\(fileID)", line: Int(line))
        core.misuses.withLock { $0.append(misuse) }
        core.environment.report(
            ObserverFailure(
                error: mismatch, notificationType: "every \(mismatch.family)", fileID: misuse.fileID, line: misuse.line)
        )
        MainQueueExecutorScope.current?.noteRefusedRegistration(on: self)
        return true
    }

    /// The registrations refused since the last call, oldest first; for HeraldTesting, which
    /// fails the test with them.
    @_spi(Testing)
    public func _takeRegistrationMisuses() -> [RegistrationMisuse] {
        core.misuses.exchange([])
    }
}
